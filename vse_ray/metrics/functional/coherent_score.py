"""Coherent Score CS@K (ladder loss paper, Sec. III-D, eq. 13) and Kendall tau vs pseudo labels (BCLS)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from vse_ray.metrics.functional._checks import as_matrix, check_chunk_size, check_ks, check_same_shape
from vse_ray.metrics.functional._reduce import nan_mean
from vse_ray.metrics.functional._sorting import row_chunks, topk_indices
from vse_ray.metrics.functional.kendall_tau import kendall_rows


def coherent_score(
    sims: Any, relevance: Any, k: int | None = None, *, chunk_size: int = 1024, reduce: bool = True
) -> float | np.ndarray:
    r"""CS@K: Kendall tau-b between model scores and relevance degrees over each query's top-K, averaged.

    Ladder loss paper, eq. 13: for query q, the model's top-K list (ties: lower index first) gives the
    real ranking ``r`` (the similarities) and the expected ranking ``e`` (the relevance degrees);

    .. math:: \tau_q = \frac{P - Q}{\sqrt{(P + Q + T)(P + Q + U)}}, \qquad
              \mathrm{CS@K} = \operatorname{mean}_q \tau_q

    with ties handled exactly as ``scipy.stats.kendalltau``. With ``k=None`` the whole gallery is used:
    that is the Kendall tau against continuous pseudo labels of the BCLS paper (Table VI).

    NaN handling: a query whose top-K scores or relevances are all equal (or K = 1) has an undefined
    tau (scipy returns NaN); the mean skips such queries (``nanmean``) and is NaN only if every query is
    undefined.

    Args:
        sims: (n_queries, n_gallery) similarities; rows are queries (pass ``sims.T`` for text->image).
        relevance: (n_queries, n_gallery) relevance degrees in the same orientation.
        k: cut-off K (1 <= K <= n_gallery), or None for the whole gallery.
        chunk_size: queries per chunk.
        reduce: return the mean (float) if True, else the (n_queries,) per-query taus.

    Raises:
        ValueError: on mismatched shapes, non-finite values or an out-of-range ``k``/``chunk_size``.
    """
    k = np.shape(sims)[-1] if k is None else k
    taus = per_query_coherent_scores(sims, relevance, (k,), chunk_size=chunk_size)[k]
    return nan_mean(taus) if reduce else taus


def coherent_scores(
    sims: Any, relevance: Any, ks: Sequence[int], *, chunk_size: int = 1024
) -> dict[int, float]:
    """CS@K for several cut-offs at once (one top-max(K) selection per chunk); see :func:`coherent_score`."""
    taus = per_query_coherent_scores(sims, relevance, ks, chunk_size=chunk_size)
    return {k: nan_mean(values) for k, values in taus.items()}


def per_query_coherent_scores(
    sims: Any, relevance: Any, ks: Sequence[int], *, chunk_size: int = 1024
) -> dict[int, np.ndarray]:
    """Per-query tau over the top K for each K of ``ks``: the model's ordered top-max(K) is sliced.

    Tau is unchanged when both variables are permuted alike, so a K covering the whole gallery takes the
    rows as they are, without a top-K selection.
    """
    sims = as_matrix("sims", sims)
    relevance = as_matrix("relevance", relevance)
    check_same_shape("relevance", relevance, sims)
    ks = check_ks("k", ks, sims.shape[1])
    n_gallery = sims.shape[1]
    cut = [k for k in ks if k < n_gallery]
    taus = {k: np.empty(sims.shape[0], dtype=np.float64) for k in ks}
    for rows in row_chunks(sims.shape[0], check_chunk_size(chunk_size)):
        if cut:
            top = topk_indices(sims[rows], max(cut), ordered=min(cut) < max(cut))
            scores = np.take_along_axis(sims[rows], top, axis=1)
            degrees = np.take_along_axis(relevance[rows], top, axis=1)
        for k in ks:
            if k < n_gallery:
                taus[k][rows] = kendall_rows(scores[:, :k], degrees[:, :k])
            else:
                taus[k][rows] = kendall_rows(sims[rows], relevance[rows])
    return taus
