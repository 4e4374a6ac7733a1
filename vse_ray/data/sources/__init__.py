"""Where a dataset comes from before precompute: Karpathy JSON, precomp folders, image files."""
