"""R-Precision of the ECCV Caption benchmark (Chun et al. 2022; BCLS paper, Table VII)."""

from __future__ import annotations

from typing import Any

import numpy as np

from vse_ray.metrics.functional._ranked import iter_hits_at_r


def r_precision(sims: Any, positives: Any, *, chunk_size: int = 1024) -> float:
    r"""R-Precision: the precision of each query's top R items, R = its number of positives, averaged.

    As ``eccv_caption._metrics.rprecision``: :math:`\mathrm{RP}_q = |\mathrm{top}_{R_q} \cap G_q| / R_q`,
    averaged over the queries with at least one positive. Ties in the ranking keep the lower index.

    Args:
        sims: (n_queries, n_gallery) similarities; rows are queries.
        positives: (n_queries, n_gallery) binary relevance mask.
        chunk_size: queries per chunk.

    Returns:
        R-Precision in [0, 1].

    Raises:
        ValueError: on bad shapes or a mask without any positive.
    """
    scores = []
    for hits, r in iter_hits_at_r(sims, positives, chunk_size):
        within_r = np.arange(hits.shape[1])[None, :] < r[:, None]
        scores.append((hits & within_r).sum(axis=1) / r)
    return float(np.concatenate(scores).mean())
