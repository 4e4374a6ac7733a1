"""vse_ray: visual-semantic embeddings with graded relevance, trained and evaluated on Ray."""

__version__ = "0.1.0"
