"""mAP@R of the ECCV Caption benchmark (Chun et al. 2022; BCLS paper, Table VII)."""

from __future__ import annotations

from typing import Any

import numpy as np

from vse_ray.metrics.functional._ranked import iter_hits_at_r


def map_at_r(sims: Any, positives: Any, *, chunk_size: int = 1024) -> float:
    r"""mAP@R: average precision over the first R ranks, R = the number of positives of the query.

    As ``eccv_caption._metrics.compute_eccv_metrics``: with :math:`\mathrm{rel}(r)` the positiveness of the
    item at rank r and :math:`P@r` the precision of the top r,

    .. math:: \mathrm{AP@R}_q = \frac{1}{R_q} \sum_{r=1}^{R_q} \mathrm{rel}(r)\, P@r, \qquad
              \mathrm{mAP@R} = \operatorname{mean}_q \mathrm{AP@R}_q

    over the queries that have at least one positive (ECCV Caption lists only those). Ties in the
    ranking keep the lower index.

    Args:
        sims: (n_queries, n_gallery) similarities; rows are queries.
        positives: (n_queries, n_gallery) binary relevance mask (e.g. ECCV Caption associations).
        chunk_size: queries per chunk.

    Returns:
        mAP@R in [0, 1].

    Raises:
        ValueError: on bad shapes or a mask without any positive.
    """
    scores = []
    for hits, r in iter_hits_at_r(sims, positives, chunk_size):
        ranks = np.arange(1, hits.shape[1] + 1)
        precision = np.cumsum(hits, axis=1) / ranks
        scores.append((precision * hits * (ranks[None, :] <= r[:, None])).sum(axis=1) / r)
    return float(np.concatenate(scores).mean())
