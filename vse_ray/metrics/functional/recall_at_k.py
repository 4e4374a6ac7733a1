"""Image<->text R@K (both conventions), med r, mean r and rsum (VSE++; SAM paper eq. 1-2)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from vse_ray.metrics.functional._checks import as_image_index, as_matrix
from vse_ray.metrics.functional.retrieval_recall import retrieval_recall


def ground_truth_mask(img_of_cap: Any, n_images: int) -> np.ndarray:
    """(n_images, n_captions) boolean mask: ``mask[i, j]`` is True when caption j describes image i."""
    index = np.asarray(img_of_cap)
    return index[None, :] == np.arange(n_images)[:, None]


def recall_at_k(
    sims: Any, img_of_cap: Any, ks: Sequence[int] = (1, 5, 10), *, chunk_size: int = 1024
) -> dict[str, float]:
    r"""Recall metrics in both directions plus rsum, in percent.

    Image->text queries are the rows of ``sims`` with the captions of that image as positives (up to 5:
    R^V and true recall differ); text->image queries are the columns with one positive image (both
    conventions agree, SAM paper Sec. 3.1). ``rsum`` is the sum of R^V@K over both directions and all
    ``ks`` (VSE++ model selection).

    Args:
        sims: (n_images, n_captions) similarities.
        img_of_cap: (n_captions,) image index of each caption.
        ks: cut-offs; each must not exceed n_images.
        chunk_size: queries per chunk.

    Returns:
        ``{"R_at_1_i2t", "trueR_at_1_i2t", "medr_i2t", "meanr_i2t", ..., "R_at_1_t2i", ..., "rsum"}``.

    Raises:
        ValueError: on a bad ``img_of_cap`` (wrong length, out-of-range index, an image without captions).
    """
    sims = as_matrix("sims", sims)
    n_images, n_captions = sims.shape
    index = as_image_index(img_of_cap, n_images, n_captions)
    missing = np.setdiff1d(np.arange(n_images), index)
    if missing.size:
        raise ValueError(f"img_of_cap: images {missing[:5].tolist()} have no caption")
    truth = ground_truth_mask(index, n_images)
    scores = {}
    for direction, matrix, mask in (("i2t", sims, truth), ("t2i", sims.T, truth.T)):
        for name, value in retrieval_recall(matrix, mask, ks, chunk_size=chunk_size).items():
            scores[f"{name}_{direction}"] = value
    scores["rsum"] = sum(scores[f"R_at_{k}_{d}"] for k in ks for d in ("i2t", "t2i"))
    return scores
