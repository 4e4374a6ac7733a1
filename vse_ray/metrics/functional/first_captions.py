"""The ladder code's CS@K gallery: each image against its first caption only, relevance between captions.

cdluminate/ladderloss (``doTau``, ladderloss.py at b37ad78) keeps every fifth row of its feature dump, one
caption per image, so its score matrix is N images x their N first captions, and the relevance of image i to
caption j is the cosine of the Sentence-BERT embeddings of i's first caption and caption j (the embeddings
L2-normalised, ``embs @ embs.T``); both directions read the same N x N matrix.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vse_ray.metrics.functional._checks import as_image_index, as_matrix


def first_caption_columns(img_of_cap: Any, n_images: int) -> np.ndarray:
    """(n_images,) column of each image's first caption (its lowest column).

    Raises:
        ValueError: naming the first image without a caption.
    """
    index = as_image_index(img_of_cap, n_images, len(np.asarray(img_of_cap)))
    images, first = np.unique(index, return_index=True)
    if len(images) != n_images:
        missing = np.setdiff1d(np.arange(n_images), images)[0]
        raise ValueError(f"img_of_cap: image {missing} has no caption")
    return first


def first_caption_view(sims: Any, img_of_cap: Any, vectors: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(sims, img_of_cap, relevance)`` of the images against their first captions: (n, n) scores, the
    identity index and the cosine of the first captions' ``vectors`` ((n_captions, D), one row a caption)."""
    sims = as_matrix("sims", sims)
    vectors = np.asarray(vectors, dtype=np.float64)
    if vectors.ndim != 2 or len(vectors) != sims.shape[1]:
        raise ValueError(f"vectors: expected ({sims.shape[1]}, D) caption vectors, got {vectors.shape}")
    columns = first_caption_columns(img_of_cap, sims.shape[0])
    first = vectors[columns]
    first = first / np.linalg.norm(first, axis=1, keepdims=True)
    return sims[:, columns], np.arange(sims.shape[0]), (first @ first.T).astype(np.float32)
