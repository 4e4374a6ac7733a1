"""Semantic Recall SR@K with m extended relevant items (SAM/NCS paper, Sec. 3.2, eq. 3-4)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from vse_ray.metrics.functional._checks import (
    as_mask,
    as_matrix,
    check_chunk_size,
    check_k,
    check_ks,
    check_same_shape,
)
from vse_ray.metrics.functional._ranked import check_exclude_leaves_k, masked_topk
from vse_ray.metrics.functional._sorting import row_chunks


def semantic_recall(
    sims: Any, relevance: Any, k: int, m: int, *, exclude: Any = None, chunk_size: int = 1024
) -> float:
    r"""SR@K: the fraction of each query's m most relevant items found in its top K, averaged.

    SAM/NCS paper, eq. 3-4: :math:`\tilde G_q` holds the m items with the highest relevance
    :math:`N_{qj} = \phi(G_q, c_j)` (CIDEr or SPICE), and

    .. math:: R^{SR}_q@k = \frac{|\tilde G_q \cap Q_{qk}|}{|\tilde G_q|}

    ``exclude`` removes items from both rankings first: pass the ground-truth mask to score non-GT items
    only, as in the paper's Figure 3. Ties in either ranking keep the lower index. The authors' released
    code extends the relevant set by whole images instead: see :func:`semantic_recall_by_image`.

    Args:
        sims: (n_queries, n_gallery) similarities; rows are queries.
        relevance: (n_queries, n_gallery) relevance in the same orientation.
        k: cut-off of the model's ranking.
        m: number of extended relevant items per query.
        exclude: optional (n_queries, n_gallery) binary mask of items removed from the evaluation.
        chunk_size: queries per chunk.

    Returns:
        Mean SR@k in [0, 1].
    """
    return semantic_recall_at_ks(sims, relevance, (k,), m, exclude=exclude, chunk_size=chunk_size)[k]


def semantic_recall_at_ks(
    sims: Any, relevance: Any, ks: Sequence[int], m: int, *, exclude: Any = None, chunk_size: int = 1024
) -> dict[int, float]:
    """SR@K for several cut-offs from one ordered top-max(K); see :func:`semantic_recall`."""
    sims = as_matrix("sims", sims)
    relevance = as_matrix("relevance", relevance)
    check_same_shape("relevance", relevance, sims)
    ks = check_ks("k", ks, sims.shape[1])
    m = check_k("m", m, sims.shape[1])
    exclude = None if exclude is None else as_mask("exclude", exclude, sims.shape)
    check_exclude_leaves_k(exclude, max(*ks, m), sims.shape[1])
    found = {k: np.empty(sims.shape[0], dtype=np.int64) for k in ks}
    for rows in row_chunks(sims.shape[0], check_chunk_size(chunk_size)):
        dropped = None if exclude is None else exclude[rows]
        relevant = np.zeros(relevance[rows].shape, dtype=bool)
        np.put_along_axis(relevant, masked_topk(relevance[rows], m, dropped), True, axis=1)
        hits = np.take_along_axis(relevant, masked_topk(sims[rows], max(ks), dropped), axis=1)
        for k in ks:
            found[k][rows] = hits[:, :k].sum(axis=1)
    return {k: float(np.mean(f / m)) for k, f in found.items()}
