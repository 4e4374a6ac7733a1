"""R@K two ways (R^V and true recall, SAM/NCS paper eq. 1-2), med r and mean r for one direction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from vse_ray.metrics.functional._checks import as_mask, as_matrix, check_chunk_size, check_ks
from vse_ray.metrics.functional._ranked import ranked_positives
from vse_ray.metrics.functional._sorting import row_chunks


def retrieval_recall(
    sims: Any,
    positives: Any,
    ks: Sequence[int] = (1, 5, 10),
    *,
    skip_empty: bool = False,
    chunk_size: int = 1024,
) -> dict[str, float]:
    r"""Recall metrics of one retrieval direction, rows = queries, in percent as the papers report them.

    With :math:`G_q` the positives of query q and :math:`Q_{qk}` its top-k items (ties: lower index first):

    - ``R_at_k``: :math:`R^V@k = 100 \cdot \operatorname{mean}_q \mathbb{1}[G_q \cap Q_{qk} \neq \emptyset]`,
      SAM/NCS paper eq. 2, the VSE++ convention: any positive in the top k;
    - ``trueR_at_k``: :math:`R@k = 100 \cdot \operatorname{mean}_q |G_q \cap Q_{qk}| / |G_q|` (eq. 1);
    - ``medr`` / ``meanr``: median (``floor(median) + 1`` as in the VSE++ code) and mean 1-based rank of
      the first positive.

    Args:
        sims: (n_queries, n_gallery) similarities.
        positives: (n_queries, n_gallery) binary mask; every query needs at least one positive unless
            ``skip_empty``.
        ks: cut-offs, each in [1, n_gallery].
        skip_empty: leave queries without any positive out of every mean, as ECCV Caption does for the
            queries outside its subset (``eccv_caption._metrics.compute_eccv_metrics`` scores only the
            queries that have ground truth).
        chunk_size: queries per chunk.

    Raises:
        ValueError: on bad shapes or values, a query without any positive (unless ``skip_empty``), or
            no query with a positive at all.
    """
    sims = as_matrix("sims", sims)
    positives = as_mask("positives", positives, sims.shape)
    ks = check_ks("ks", ks, sims.shape[1])
    counts = positives.sum(axis=1)
    empty = np.flatnonzero(counts == 0)
    if skip_empty and empty.size:
        kept = counts > 0
        if not kept.any():
            raise ValueError("positives: no query has a positive item")
        sims, positives, counts = sims[kept], positives[kept], counts[kept]
    elif empty.size:
        raise ValueError(f"positives: queries {empty[:5].tolist()} have no positive item")
    first_rank = np.empty(sims.shape[0], dtype=np.int64)
    found = np.empty((sims.shape[0], len(ks)), dtype=np.int64)
    for rows in row_chunks(sims.shape[0], check_chunk_size(chunk_size)):
        hits = ranked_positives(sims[rows], positives[rows])
        first_rank[rows] = np.argmax(hits, axis=1)
        cumulative = np.cumsum(hits[:, : max(ks)], axis=1)
        found[rows] = cumulative[:, [k - 1 for k in ks]]
    scores = {}
    for column, k in enumerate(ks):
        scores[f"R_at_{k}"] = 100.0 * float(np.mean(first_rank < k))
        scores[f"trueR_at_{k}"] = 100.0 * float(np.mean(found[:, column] / counts))
    scores["medr"] = float(np.floor(np.median(first_rank)) + 1)
    scores["meanr"] = float(first_rank.mean() + 1)
    return scores
