"""COCO 1K protocol: the 5K test images split into 5 folds of 1,000 images, metrics averaged over folds."""

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
        images = slice(fold * fold_size, (fold + 1) * fold_size)
        captions = np.flatnonzero((index >= images.start) & (index < images.stop))
        fold_relevance = {name: np.asarray(m)[images][:, captions] for name, m in relevance.items()}
        yield sims[images][:, captions], index[captions] - images.start, fold_relevance


def mean_over_folds(results: list[Mapping[str, float]]) -> dict[str, float]:
    """Average metric dicts key by key (NaN-aware: a fold with an undefined value is skipped)."""
    if not results:
        raise ValueError("results: expected at least one fold")
    return {key: nan_mean(np.array([fold[key] for fold in results])) for key in results[0]}
