"""Image blocks of a split: COCO 1K's 5 folds of 1,000 images (metrics averaged over folds), or its first
1,000 images once."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from vse_ray.metrics.functional._checks import as_image_index, as_matrix
from vse_ray.metrics.functional._reduce import nan_mean


def coco_1k_folds(
    sims: Any,
    img_of_cap: Any,
    relevance: Mapping[str, Any] | None = None,
    *,
    n_folds: int = 5,
) -> Iterator[tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]]:
    """Yield ``(sims, img_of_cap, relevance)`` restricted to each fold of consecutive images.

    Fold f holds images ``[f * n, (f + 1) * n)`` with ``n = n_images / n_folds`` and every caption of those
    images (VSE++ ``evalrank(fold5=True)``); ``img_of_cap`` is re-indexed to the fold. Average the
    per-fold results with :func:`mean_over_folds` for the "1K" numbers.

    Raises:
        ValueError: if ``n_images`` is not a multiple of ``n_folds`` or a relevance matrix is misshapen.
    """
    sims = as_matrix("sims", sims)
    n_images, n_captions = sims.shape
    index = as_image_index(img_of_cap, n_images, n_captions)
    if n_folds < 1 or n_images % n_folds:
        raise ValueError(f"n_folds: {n_images} images do not split into {n_folds} equal folds")
    relevance = dict(relevance or {})
    for name, matrix in relevance.items():
        if np.shape(matrix) != sims.shape:
            raise ValueError(f"relevance[{name!r}]: shape {np.shape(matrix)} differs from sims {sims.shape}")
    fold_size = n_images // n_folds
    for fold in range(n_folds):
        yield image_block(sims, index, relevance, fold * fold_size, (fold + 1) * fold_size)[:3]


def image_block(
    sims: np.ndarray, index: np.ndarray, relevance: Mapping[str, Any], start: int, stop: int
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray], np.ndarray]:
    """``(sims, img_of_cap, relevance, captions)`` of images ``[start, stop)`` and every caption of them:
    ``img_of_cap`` re-indexed to the block, ``captions`` the block's caption columns in the whole matrix."""
    captions = np.flatnonzero((index >= start) & (index < stop))
    block_relevance = {name: np.asarray(m)[start:stop][:, captions] for name, m in relevance.items()}
    return sims[start:stop][:, captions], index[captions] - start, block_relevance, captions


def mean_over_folds(results: list[Mapping[str, float]]) -> dict[str, float]:
    """Average metric dicts key by key (NaN-aware: a fold with an undefined value is skipped)."""
    if not results:
        raise ValueError("results: expected at least one fold")
    return {key: nan_mean(np.array([fold[key] for fold in results])) for key in results[0]}
