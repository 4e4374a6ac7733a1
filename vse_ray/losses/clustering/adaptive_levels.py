"""Adaptive ladder levels: per query, K-Means on the negatives' relevance with k chosen by Silhouette."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from vse_ray.losses.clustering.kmeans_1d import kmeans_1d_sorted, prefix_sums
from vse_ray.losses.clustering.silhouette_1d import silhouette_1d_sorted


def distinct_rows(xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the first copy of each distinct row of ``xs`` (R, n) and, per row, the copy it equals.

    Clustering results depend on a row's values only, so equal rows - both directions of a symmetric
    relevance matrix - are clustered once. Rows are grouped by a weighted sum and then compared exactly;
    if two rows with equal sums differ, every row counts as distinct.
    """
    finite = np.where(np.isfinite(xs), xs, -1.0)
    weights = np.cos(np.arange(xs.shape[1]))  # fixed, irregular weights
    _, first, copy_of = np.unique(finite @ weights, return_index=True, return_inverse=True)
    if not np.array_equal(xs, xs[first[copy_of]]):
        everyone = np.arange(len(xs))
        return everyone, everyone
    return first, copy_of


def adaptive_levels(
    relevance: Tensor, candidates: Tensor, l_min: int, l_max: int, max_iter: int = 100
) -> tuple[Tensor, Tensor]:
    """Ladder levels of each query's negatives by 1-D K-Means + mean Silhouette (ladder eq. 9-12).

    For every query row, the relevance values of its candidates (the non-positive set N^{-q}) are
    clustered for every k in [l_min, l_max]; L* is the k with the largest mean Silhouette (the smallest k
    on ties) and its clusters become the levels, level 1 holding the highest-relevance cluster. Only k up
    to the number of candidates is tried; rows with fewer than l_min candidates get a single level.
    All rows and all k are clustered at once (float64 numpy on the host: the relevance carries no
    gradient), without a per-query loop; equal rows (both directions of a symmetric relevance) once.
    Equal values always share a cluster, so a value's cluster is the number of cluster starts whose first
    value it reaches - no inverse sort permutation is needed.

    Args:
        relevance: (..., Q, C) relevance degrees.
        candidates: (..., Q, C) bool, the values to cluster per row.
        l_min, l_max: bounds of k (L_MIN, L_MAX).
        max_iter: Lloyd iteration cap.

    Returns:
        (levels, n_levels): levels (..., Q, C) int64 in 1..L* on candidates and 0 elsewhere; L* (..., Q).
    """
    lead, n_cols = relevance.shape[:-1], relevance.shape[-1]
    values = relevance.detach().to(device="cpu", dtype=torch.float64).numpy().reshape(-1, n_cols)
    mask = candidates.cpu().numpy().reshape(-1, n_cols)
    keyed = np.where(mask, values, np.inf)
    xs = np.sort(keyed, axis=-1)
    counts = mask.sum(-1)
    ks = np.arange(l_min, l_max + 1)
    n_rows = xs.shape[0]
    first, copy_of = distinct_rows(xs)
    unique_xs, unique_counts = xs[first], counts[first]
    prefix = prefix_sums(unique_xs, unique_counts)
    unique_ks = np.broadcast_to(ks, (len(first), len(ks)))
    unique_ends = kmeans_1d_sorted(unique_xs, unique_counts, unique_ks, max_iter, prefix)
    ends = unique_ends[copy_of]
    scores = silhouette_1d_sorted(unique_xs, unique_counts, unique_ends, prefix)[copy_of]
    scores[ks > counts[:, None]] = -np.inf
    best = scores.argmax(-1)
    clustered = np.isfinite(scores).any(-1)
    chosen_k = np.where(clustered, ks[best], 1)
    starts = np.where(clustered[:, None], ends[np.arange(n_rows), best, :-1], counts[:, None])
    first_values = np.take_along_axis(xs, np.minimum(starts, n_cols - 1), -1)
    first_values[starts >= counts[:, None]] = np.inf
    cluster = np.zeros(keyed.shape, dtype=np.int64)
    for t in range(first_values.shape[1]):
        cluster += keyed >= first_values[:, t : t + 1]
    levels = np.where(mask, chosen_k[:, None] - cluster, 0)
    device = relevance.device
    return (
        torch.from_numpy(levels).to(device).view(*lead, n_cols),
        torch.from_numpy(chosen_k).to(device).view(lead),
    )
