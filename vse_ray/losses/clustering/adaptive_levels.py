"""Adaptive ladder levels: per query, K-Means on the negatives' relevance with k chosen by Silhouette."""

from __future__ import annotations

import torch
from torch import Tensor

from vse_ray.losses.clustering.kmeans_1d import kmeans_1d_sorted
from vse_ray.losses.clustering.silhouette_1d import silhouette_1d_sorted
from vse_ray.losses.sorting import argsort_rows


def adaptive_levels(
    relevance: Tensor, candidates: Tensor, l_min: int, l_max: int, max_iter: int = 100
) -> tuple[Tensor, Tensor]:
    """Ladder levels of each query's negatives by 1-D K-Means + mean Silhouette (ladder eq. 9-12).

    For every query row, the relevance values of its candidates (the non-positive set N^{-q}) are
    clustered for every k in [l_min, l_max]; L* is the k with the largest mean Silhouette (the smallest k
    on ties) and its clusters become the levels, level 1 holding the highest-relevance cluster. Only k up
    to the number of candidates is tried; rows with fewer than l_min candidates get a single level.
    All rows and all k are clustered at once (float64), without a per-query loop.

    Args:
        relevance: (..., Q, C) relevance degrees.
        candidates: (..., Q, C) bool, the values to cluster per row.
        l_min, l_max: bounds of k (L_MIN, L_MAX).
        max_iter: Lloyd iteration cap.

    Returns:
        (levels, n_levels): levels (..., Q, C) int64 in 1..L* on candidates and 0 elsewhere; L* (..., Q).
    """
    lead, n_cols = relevance.shape[:-1], relevance.shape[-1]
    keyed = relevance.detach().to(torch.float64).reshape(-1, n_cols)
    mask = candidates.reshape(-1, n_cols)
    keyed = keyed.masked_fill(~mask, float("inf"))
    order = argsort_rows(keyed)
    xs = keyed.gather(-1, order)
    counts = mask.sum(-1)
    ks = torch.arange(l_min, l_max + 1, device=xs.device)
    n_rows = xs.shape[0]
    ends = kmeans_1d_sorted(xs, counts, ks.expand(n_rows, -1), max_iter)
    scores = silhouette_1d_sorted(xs, counts, ends)
    scores = scores.masked_fill(ks > counts.unsqueeze(-1), float("-inf"))
    best = scores.argmax(-1)
    clustered = torch.isfinite(scores).any(-1)
    chosen_k = torch.where(clustered, ks[best], 1)
    chosen_ends = ends[torch.arange(n_rows, device=xs.device), best]
    chosen_ends = torch.where(clustered.unsqueeze(-1), chosen_ends, counts.unsqueeze(-1))
    pos = torch.arange(n_cols, device=xs.device).expand(n_rows, n_cols).contiguous()
    cluster = torch.searchsorted(chosen_ends, pos, right=True)
    level_sorted = (chosen_k.unsqueeze(-1) - cluster).clamp(min=0)
    levels = torch.zeros_like(level_sorted).scatter(-1, order, level_sorted) * mask
    return levels.view(*lead, n_cols), chosen_k.view(lead)
