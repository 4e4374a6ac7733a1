"""Adaptive ladder levels: per query, K-Means on the negatives' relevance with k chosen by Silhouette."""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from vse_ray.compiled_kernels import njit
from vse_ray.losses.kernels.backend import use_compiled
from vse_ray.losses.kernels.clustering.kmeans_1d import lloyd_row, row_prefix_sums
from vse_ray.losses.kernels.clustering.kmeans_1d_exact import exact_ends, exact_tables, inverses
from vse_ray.losses.kernels.clustering.silhouette_1d import row_noise, silhouette_row
from vse_ray.losses.kernels.clustering.torch_levels import torch_adaptive_levels
from vse_ray.losses.kernels.distinct_rows import distinct_rows


@njit
def levels_rows(
    values: np.ndarray,
    mask: np.ndarray,
    xs: np.ndarray,
    counts: np.ndarray,
    same_as: np.ndarray,
    l_min: int,
    l_max: int,
    max_iter: int,
    exact: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Levels (R, n) and L* (R,) of rows ``values`` with candidates ``mask``, given each row's candidate
    values sorted ``xs`` (+inf padding), their ``counts``, and an earlier or the same row with equal ``xs``
    (``same_as``), whose clustering is reused; K-Means by ``exact_tables`` or ``lloyd_row``; see
    ``adaptive_levels``.
    """
    n_rows, n = values.shape
    levels = np.zeros((n_rows, n), dtype=np.int64)
    n_levels = np.ones(n_rows, dtype=np.int64)
    chosen_ends = np.empty((n_rows, l_max), dtype=np.int64)
    prefix, sil = np.empty(n + 1), np.empty(n)
    centres, ends = np.empty(l_max), np.empty(l_max, dtype=np.int64)
    s1, s2, w, inverse = np.empty(n + 1), np.empty(n + 1), np.empty(n + 1, dtype=np.int64), inverses(n)
    opt, layers = np.zeros((l_max + 1, n + 1), dtype=np.int64), np.empty((2, n + 1))
    stack = np.empty((2 * n + 4, 4), dtype=np.int64)
    for r in range(n_rows):
        x, count = xs[r], counts[r]
        if same_as[r] < r:
            n_levels[r], chosen_ends[r] = n_levels[same_as[r]], chosen_ends[same_as[r]]
        elif count >= l_min:
            row_prefix_sums(x, count, prefix)
            noise, best, m = row_noise(prefix), -math.inf, 0
            if exact:
                m = exact_tables(x, count, min(l_max, count), s1, s2, w, inverse, opt, layers, stack)
            for k in range(l_min, min(l_max, count) + 1):
                if exact:
                    exact_ends(k, m, w, opt, count, ends)
                else:
                    lloyd_row(x, count, k, max_iter, prefix, centres, ends)
                score = silhouette_row(x, count, ends, prefix, noise, sil)
                if score > best:  # the smallest k on ties
                    n_levels[r], chosen_ends[r], best = k, ends, score
        for c in range(n):
            levels[r, c] = n_levels[r] * mask[r, c]
        for t in range(n_levels[r] - 1):  # level 1 holds the highest values: count the cluster starts reached
            first = x[chosen_ends[r, t]] if chosen_ends[r, t] < count else math.inf
            for c in range(n):
                levels[r, c] -= mask[r, c] & (values[r, c] >= first)
    return levels, n_levels


KMEANS = ("exact", "lloyd")


def adaptive_levels(
    relevance: Tensor,
    candidates: Tensor,
    l_min: int,
    l_max: int,
    max_iter: int = 100,
    kmeans: str = "exact",
) -> tuple[Tensor, Tensor]:
    """Ladder levels of each query's negatives by 1-D K-Means + mean Silhouette (ladder eq. 9-12).

    For every query row, the relevance values of its candidates (the non-positive set N^{-q}) are
    clustered for every k in [l_min, l_max]; L* is the k with the largest mean Silhouette (the smallest k
    on ties) and its clusters become the levels, level 1 holding the highest-relevance cluster. Only k up
    to the number of candidates is tried; rows with fewer than l_min candidates get a single level.
    The K-Means is exact (``kmeans="exact"``: the least within-cluster sum of squares over all interval
    partitions, by dynamic programming) or Lloyd's algorithm from quantile centres (``"lloyd"``: a fixed
    point, which can be above the optimum and then change L*).

    CPU tensors: rows are sorted by numpy (float64 on the host: the relevance carries no gradient), then
    one compiled loop clusters each row for every k (``exact_tables`` / ``lloyd_row``), scores it
    (``silhouette_row``) and writes the levels, without a per-query Python loop; equal rows (both
    directions of a symmetric relevance) are clustered once. Other devices: the same steps as batched
    torch operations on the device (``torch_adaptive_levels``). Equal values always share a cluster, so a
    value's cluster is the number of cluster starts whose first value it reaches - no inverse sort
    permutation is needed.

    Args:
        relevance: (..., Q, C) relevance degrees.
        candidates: (..., Q, C) bool, the values to cluster per row.
        l_min, l_max: bounds of k (L_MIN, L_MAX).
        max_iter: Lloyd iteration cap.
        kmeans: "exact" (default) or "lloyd".

    Returns:
        (levels, n_levels): levels (..., Q, C) int64 in 1..L* on candidates and 0 elsewhere; L* (..., Q).
    """
    if kmeans not in KMEANS:
        raise ValueError(f"kmeans must be one of {KMEANS}, got {kmeans!r}")
    if not use_compiled(relevance):
        return torch_adaptive_levels(relevance, candidates, l_min, l_max, max_iter, kmeans == "exact")
    lead, n_cols = relevance.shape[:-1], relevance.shape[-1]
    values = np.ascontiguousarray(
        relevance.detach().to(device="cpu", dtype=torch.float64).reshape(-1, n_cols)
    )
    mask = np.ascontiguousarray(candidates.cpu().reshape(-1, n_cols))
    xs = np.sort(np.where(mask, values, np.inf), axis=-1)
    first, copy_of = distinct_rows(xs)
    levels, chosen_k = levels_rows(
        values, mask, xs, mask.sum(-1), first[copy_of], l_min, l_max, max_iter, kmeans == "exact"
    )
    device = relevance.device
    return (
        torch.from_numpy(levels).to(device).view(*lead, n_cols),
        torch.from_numpy(chosen_k).to(device).view(lead),
    )
