"""Row blocks of an evaluation split's full (n_images, n_captions) relevance matrix, from caption vectors."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from vse_ray.relevance.scene import scene_similarity


def mean_cosine(
    caption_vectors: np.ndarray, img_of_cap: np.ndarray, n_images: int
) -> Callable[[slice], np.ndarray]:
    """Row blocks of ``R[i, j] = mean_{r in refs(i)} cos(v_r, v_j)`` for L2-normalised (or zero) vectors."""
    sums = np.zeros((n_images, caption_vectors.shape[1]), dtype=np.float64)
    np.add.at(sums, img_of_cap, caption_vectors)
    means = (sums / np.bincount(img_of_cap, minlength=n_images)[:, None]).astype(np.float32)
    return lambda rows: means[rows] @ caption_vectors.T


def scene_rows(
    descriptors: np.ndarray, img_of_cap: np.ndarray, n_images: int
) -> Callable[[slice], np.ndarray]:
    """Row blocks of ``R[i, j] = S(scene of image i, scene of caption j's image)``."""
    caption_of_image = np.zeros(n_images, dtype=np.int64)
    caption_of_image[img_of_cap] = np.arange(len(img_of_cap))  # any caption: all carry their image's scene
    per_image = torch.from_numpy(np.ascontiguousarray(descriptors[caption_of_image]))

    def rows_of(rows: slice) -> np.ndarray:
        return scene_similarity(per_image[rows], per_image).numpy()[:, img_of_cap]

    return rows_of
