"""Semantic Recall as the SAM/NCS authors' released code computes it: relevant sets made of whole images."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from vse_ray.metrics.functional._checks import (
    as_image_index,
    as_matrix,
    check_chunk_size,
    check_k,
    check_ks,
    check_same_shape,
)
from vse_ray.metrics.functional._ranked import masked_topk
from vse_ray.metrics.functional._reduce import nan_mean
from vse_ray.metrics.functional._sorting import row_chunks, topk_indices

DIRECTIONS = ("i2t", "t2i")


def semantic_recall_by_image(
    sims: Any,
    relevance: Any,
    img_of_cap: Any,
    ks: Sequence[int],
    m: int,
    *,
    direction: str = "i2t",
    depth: int | None = None,
    chunk_size: int = 1024,
) -> dict[int, float]:
    r"""SR@K on non-ground-truth items with the relevant set of the released NCS code (``Metric.recall``).

    Eq. 4 of the SAM/NCS paper extends a query's relevant set with its m most relevant items
    (:func:`semantic_recall`). The authors' code, which produced the published figures, extends it by
    images instead. With :math:`N_{ic} = \phi(G_i, c)`, each caption c keeps its ``depth`` most relevant
    images :math:`T_c`, and image i scores every other image i' by

    .. math:: w_i(i') = \sum_{c \in \mathrm{caps}(i)} N_{i'c}\, \mathbb{1}[i' \in T_c]

    over the images that occur in some :math:`T_c` (the image itself left out). The m best images
    :math:`\tilde I_i` form the relevant set: image->text, query image i: all captions of
    :math:`\tilde I_i`; text->image, query caption c of image i: the images :math:`\tilde I_i`. The
    ground truth is removed from the ranking (the code's ``include_anns=False``) and
    :math:`SR_q@k = |\tilde G_q \cap Q_{qk}| / |\tilde G_q|`. Ties keep the lower index everywhere. The
    code divides by m·(captions per image) resp. m; that is :math:`|\tilde G_q|` unless fewer than m
    other images occur in the :math:`T_c` of the query image's captions (possible only when m >= depth).

    Args:
        sims: (n_images, n_captions) similarities, in this orientation for both directions.
        relevance: (n_images, n_captions) relevance :math:`\phi(G_i, c_j)` (CIDEr or SPICE).
        img_of_cap: (n_captions,) image index of each caption.
        ks: cut-offs of the model's ranking, each at most the gallery left without the ground truth.
        m: number of relevant images per query, in [1, n_images - 1].
        direction: "i2t" (queries: images) or "t2i" (queries: captions).
        depth: images kept per caption for :math:`T_c`; default max(ks), as the code's ``TOP_K``.
        chunk_size: query images (resp. captions) per chunk.

    Returns:
        ``{k: mean SR@k}`` in [0, 1]; queries with an empty relevant set are skipped (NaN if all are).
    """
    sims = as_matrix("sims", sims)
    relevance = as_matrix("relevance", relevance)
    check_same_shape("relevance", relevance, sims)
    index = as_image_index(img_of_cap, *sims.shape)
    if direction not in DIRECTIONS:
        raise ValueError(f"direction: expected one of {DIRECTIONS}, got {direction!r}")
    n_images, n_captions = sims.shape
    n_left = n_captions - int(np.bincount(index).max()) if direction == "i2t" else n_images - 1
    if n_left < 1:
        raise ValueError("img_of_cap: no item is left once the ground truth is removed")
    ks = check_ks("k", ks, n_left)
    m = check_k("m", m, max(n_images - 1, 1))
    depth = max(ks) if depth is None else check_k("depth", depth, n_images)
    chunk_size = check_chunk_size(chunk_size)
    images, found = relevant_images(relevance, index, m, depth, chunk_size)
    n_queries = n_images if direction == "i2t" else n_captions
    hits = {k: np.empty(n_queries) for k in ks}
    for rows in row_chunks(n_queries, chunk_size):
        query_image = np.arange(rows.start, rows.stop) if direction == "i2t" else index[rows]
        relevant = np.zeros((len(query_image), n_images), dtype=bool)
        np.put_along_axis(relevant, images[query_image], found[query_image], axis=1)
        if direction == "i2t":
            scores, relevant = sims[rows], relevant[:, index]
            ground_truth = index[None, :] == query_image[:, None]
        else:
            scores = sims.T[rows]
            ground_truth = np.arange(n_images)[None, :] == query_image[:, None]
        retrieved = np.take_along_axis(relevant, masked_topk(scores, max(ks), ground_truth), axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            for k in ks:
                hits[k][rows] = retrieved[:, :k].sum(axis=1) / relevant.sum(axis=1)
    return {k: nan_mean(h) for k, h in hits.items()}


def relevant_images(
    relevance: np.ndarray, index: np.ndarray, m: int, depth: int, chunk_size: int
) -> tuple[np.ndarray, np.ndarray]:
    """(images, found), each (n_images, m): per image its m best other images by :math:`w_i` (see
    :func:`semantic_recall_by_image`), best first, and whether each slot holds an image that occurs."""
    n_images = relevance.shape[0]
    by_image = np.argsort(index, kind="stable")
    starts = np.searchsorted(index[by_image], np.arange(n_images + 1))
    images = np.empty((n_images, m), dtype=np.int64)
    found = np.empty((n_images, m), dtype=bool)
    for rows in row_chunks(n_images, chunk_size):
        captions = by_image[starts[rows.start] : starts[rows.stop]]
        per_caption = relevance[:, captions].T  # (captions of the chunk, n_images)
        top = topk_indices(per_caption, depth, ordered=False)
        kept = np.zeros(per_caption.shape)
        np.put_along_axis(kept, top, np.take_along_axis(per_caption, top, axis=1), axis=1)
        occurs = np.zeros(per_caption.shape, dtype=bool)
        np.put_along_axis(occurs, top, True, axis=1)
        first = starts[rows.start : rows.stop] - starts[rows.start]  # each image's first caption in the chunk
        has = np.diff(starts[rows.start : rows.stop + 1]) > 0
        weight = np.zeros((rows.stop - rows.start, n_images))
        seen = np.zeros(weight.shape, dtype=bool)
        if has.any():  # captions come grouped by image: one segment sum per image
            weight[has] = np.add.reduceat(kept, first[has], axis=0)
            seen[has] = np.logical_or.reduceat(occurs, first[has], axis=0)
        weight[~seen] = -np.inf
        weight[np.arange(len(weight)), np.arange(rows.start, rows.stop)] = -np.inf
        images[rows] = topk_indices(weight, m, ordered=True)
        found[rows] = np.take_along_axis(weight, images[rows], axis=1) > -np.inf
    return images, found
