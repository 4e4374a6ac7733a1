"""Normalized Cumulative Semantic score NCS@K (SAM/NCS paper, Sec. 3.3, eq. 5)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from vse_ray.metrics.functional._checks import (
    as_mask,
    as_matrix,
    check_chunk_size,
    check_ks,
    check_same_shape,
)
from vse_ray.metrics.functional._ranked import check_exclude_leaves_k, masked_topk
from vse_ray.metrics.functional._reduce import nan_mean
from vse_ray.metrics.functional._sorting import row_chunks


def ncs(
    sims: Any,
    relevance: Any,
    k: int,
    *,
    exclude: Any = None,
    intersect: bool = False,
    chunk_size: int = 1024,
) -> float:
    r"""NCS@K: relevance retrieved in the model's top K over the relevance of the ideal top K, averaged.

    SAM/NCS paper, eq. 5, with :math:`N` the relevance matrix (CIDEr or SPICE), :math:`Q_{qk}` the model's
    top-k items and :math:`\tilde G_q` the k items of highest relevance (no threshold m is needed):

    .. math:: N_q@k = \frac{\sum_{j \in \tilde G_q \cap Q_{qk}} N_{qj}}{\sum_{l \in \tilde G_q} N_{ql}}

    Two conventions, which give very different numbers (on random data 0.52 against 0.10):

    - ``intersect=False`` (default): the numerator sums the relevance of every retrieved item, as the
      authors' released code does (``Metric.NCS``: mean relevance of the top k over the mean of the ideal
      top k); the published tables come from it;
    - ``intersect=True``: eq. 5 as printed, only retrieved items that are also in the ideal top k count.

    The code adds 1e-10 to the denominator (a query with an all-zero ideal top k scores 0); here such a
    query is undefined and skipped by the mean (NaN if all are). ``exclude`` drops items from both
    rankings before the top-k is taken: pass the ground-truth mask for NCS "without GT items" (Tables 4-5,
    Nsum(N)). Ties in either ranking keep the lower index.

    Args:
        sims: (n_queries, n_gallery) similarities; rows are queries.
        relevance: (n_queries, n_gallery) non-negative relevance in the same orientation.
        k: cut-off, 1 <= k <= items left per query.
        exclude: optional (n_queries, n_gallery) binary mask of items removed from the evaluation.
        intersect: eq. 5 as printed (True) or the released code's numerator (False, default).
        chunk_size: queries per chunk.

    Returns:
        Mean NCS@k in [0, 1].
    """
    return ncs_at_ks(sims, relevance, (k,), exclude=exclude, intersect=intersect, chunk_size=chunk_size)[k]


def ncs_at_ks(
    sims: Any,
    relevance: Any,
    ks: Sequence[int],
    *,
    exclude: Any = None,
    intersect: bool = False,
    chunk_size: int = 1024,
) -> dict[int, float]:
    """NCS@K for several cut-offs from one ordered top-max(K) per ranking; see :func:`ncs`."""
    sims = as_matrix("sims", sims)
    relevance = as_matrix("relevance", relevance)
    check_same_shape("relevance", relevance, sims)
    if (relevance < 0).any():
        raise ValueError("relevance: NCS needs non-negative relevance degrees")
    ks = check_ks("k", ks, sims.shape[1])
    exclude = None if exclude is None else as_mask("exclude", exclude, sims.shape)
    check_exclude_leaves_k(exclude, max(ks), sims.shape[1])
    values = {k: np.empty(sims.shape[0], dtype=np.float64) for k in ks}
    for rows in row_chunks(sims.shape[0], check_chunk_size(chunk_size)):
        dropped = None if exclude is None else exclude[rows]
        retrieved = masked_topk(sims[rows], max(ks), dropped)
        ideal = masked_topk(relevance[rows], max(ks), dropped)
        ideal_rank = np.full(relevance[rows].shape, max(ks), dtype=np.int64)
        np.put_along_axis(ideal_rank, ideal, np.arange(max(ks)), axis=1)
        retrieved_ideal_rank = np.take_along_axis(ideal_rank, retrieved, axis=1)
        gained = np.take_along_axis(relevance[rows], retrieved, axis=1).astype(np.float64)
        best = np.cumsum(np.take_along_axis(relevance[rows], ideal, axis=1), axis=1, dtype=np.float64)
        for k in ks:
            counted = retrieved_ideal_rank[:, :k] < k if intersect else True
            total = (gained[:, :k] * counted).sum(axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                values[k][rows] = np.where(best[:, k - 1] > 0, total / best[:, k - 1], np.nan)
    return {k: nan_mean(v) for k, v in values.items()}
