"""Mean average precision over the full ranking (ladder loss paper, Sec. V-F, Table XI)."""

from __future__ import annotations

from typing import Any

import numpy as np

from vse_ray.metrics.functional._checks import as_mask, as_matrix, check_chunk_size
from vse_ray.metrics.functional._ranked import queries_with_positives
from vse_ray.metrics.functional._sorting import row_chunks, sorted_order


def average_precision(sims: Any, positives: Any, *, chunk_size: int = 1024) -> float:
    r"""mAP: per-query average precision over the whole gallery, averaged over queries with a positive.

    Ladder loss paper, Table XI (image->text, positives: the captions of the image, or any binary
    relevance such as ``relevance >= threshold``). As ``sklearn.metrics.average_precision_score``:

    .. math:: \mathrm{AP}_q = \sum_n (R_n - R_{n-1}) P_n

    over the distinct score thresholds n, so items with tied scores are scored as one group (every
    positive of a tie group gets the precision at the group's end).

    Args:
        sims: (n_queries, n_gallery) similarities; rows are queries.
        positives: (n_queries, n_gallery) binary relevance mask.
        chunk_size: queries per chunk.

    Returns:
        mAP in [0, 1].

    Raises:
        ValueError: on bad shapes or a mask without any positive.
    """
    sims = as_matrix("sims", sims)
    positives = as_mask("positives", positives, sims.shape)
    counts = queries_with_positives(positives)
    n_gallery = sims.shape[1]
    scores = []
    for rows in row_chunks(sims.shape[0], check_chunk_size(chunk_size)):
        order, keys = sorted_order(sims[rows], descending=True)
        hits = np.take_along_axis(positives[rows], order, axis=1)
        group_end = np.ones(keys.shape, dtype=bool)
        np.not_equal(keys[:, 1:], keys[:, :-1], out=group_end[:, :-1])
        last = np.where(group_end, np.arange(n_gallery), n_gallery)
        last = np.minimum.accumulate(last[:, ::-1], axis=1)[:, ::-1]
        precision = np.cumsum(hits, axis=1) / np.arange(1, n_gallery + 1)
        at_group_end = np.take_along_axis(precision, last, axis=1)
        r = counts[rows]
        per_query = (at_group_end * hits).sum(axis=1)
        scores.append(per_query[r > 0] / r[r > 0])
    return float(np.concatenate(scores).mean())
