"""Helpers the tests share: tiny stores, a tiny BERT, cross-attention inputs, common fixtures."""
