"""Batched 1-D clustering of relevance rows (adaptive ladder levels)."""

from vse_ray.losses.kernels.clustering.adaptive_levels import adaptive_levels
from vse_ray.losses.kernels.clustering.kmeans_1d import kmeans_1d_sorted
from vse_ray.losses.kernels.clustering.kmeans_1d_exact import kmeans_1d_exact_sorted
from vse_ray.losses.kernels.clustering.silhouette_1d import silhouette_1d_sorted

__all__ = ["adaptive_levels", "kmeans_1d_exact_sorted", "kmeans_1d_sorted", "silhouette_1d_sorted"]
