"""Per-query views of a ranking shared by several metrics: ranked positives and masked top-k sets."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from vse_ray.metrics.functional._checks import as_mask, as_matrix, check_chunk_size
from vse_ray.metrics.functional._sorting import row_chunks, sorted_order, topk_indices


def ranked_positives(sims: np.ndarray, positives: np.ndarray, depth: int | None = None) -> np.ndarray:
    """``hits[q, r]``: whether the item at 0-based rank r of query q is positive (ties: lower index first).

    Only the first ``depth`` ranks are returned (all when None).
    """
    if depth is None or depth == sims.shape[1]:
        order = sorted_order(sims, descending=True)[0]
    else:
        order = topk_indices(sims, depth, ordered=True)
    return np.take_along_axis(positives, order, axis=1)


def masked_topk(scores: np.ndarray, k: int, exclude: np.ndarray | None) -> np.ndarray:
    """Ordered top-k indices per row after dropping the ``exclude`` items (ties: lower index first)."""
    if exclude is not None:
        scores = np.where(exclude, -np.inf, scores).astype(scores.dtype, copy=False)
    return topk_indices(scores, k, ordered=True)


def check_exclude_leaves_k(exclude: np.ndarray | None, k: int, n_gallery: int) -> None:
    """Raise a ValueError when a query keeps fewer than k items once ``exclude`` is applied."""
    if exclude is None:
        return
    kept = n_gallery - exclude.sum(axis=1)
    short = np.flatnonzero(kept < k)
    if short.size:
        raise ValueError(f"exclude: queries {short[:5].tolist()} keep fewer than k={k} gallery items")


def queries_with_positives(positives: np.ndarray) -> np.ndarray:
    """Number of positives per query; raises a ValueError when no query has one."""
    counts = positives.sum(axis=1)
    if not counts.any():
        raise ValueError("positives: no query has a positive item")
    return counts


def iter_hits_at_r(sims: Any, positives: Any, chunk_size: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Check the inputs, then yield ``(hits, r)`` per chunk for the queries with positives.

    ``r`` holds each query's number of positives and ``hits`` its ranked positives over the first max(r)
    ranks (see :func:`ranked_positives`).
    """
    sims = as_matrix("sims", sims)
    positives = as_mask("positives", positives, sims.shape)
    counts = queries_with_positives(positives)
    for rows in row_chunks(sims.shape[0], check_chunk_size(chunk_size)):
        keep = np.flatnonzero(counts[rows] > 0) + rows.start
        if keep.size:
            r = counts[keep]
            yield ranked_positives(sims[keep], positives[keep], depth=int(r.max())), r
