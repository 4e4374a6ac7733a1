"""Shared input checks for the retrieval metrics: every bad input fails early with a ValueError naming it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

SCORE_DTYPES = (np.float32, np.float64)


def as_matrix(name: str, value: Any) -> np.ndarray:
    """Return ``value`` (numpy array or torch tensor) as a finite 2-D float32/float64 numpy array.

    Float32 stays float32 (the fast sort path); every other dtype becomes float64, which is exact for
    float16 and for integers below 2**53, so ties and orderings are those of the caller's values.

    Raises:
        ValueError: if ``value`` is not 2-D, is empty, or holds NaN or infinite entries.
    """
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    array = np.asarray(value)
    if array.ndim != 2 or 0 in array.shape:
        raise ValueError(f"{name}: expected a non-empty 2-D matrix, got shape {array.shape}")
    if array.dtype not in SCORE_DTYPES:
        array = array.astype(np.float64)
    if not np.isfinite(array).all():
        rows = np.flatnonzero(~np.isfinite(array).all(axis=1))
        raise ValueError(f"{name}: non-finite values in rows {rows[:5].tolist()}")
    return array


def as_mask(name: str, value: Any, shape: tuple[int, int]) -> np.ndarray:
    """Return ``value`` as a boolean (n_queries, n_gallery) mask of the given shape."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    mask = np.asarray(value)
    if mask.shape != shape:
        raise ValueError(f"{name}: expected shape {shape}, got {mask.shape}")
    if mask.dtype != np.bool_:
        if not np.isin(mask, (0, 1)).all():
            raise ValueError(f"{name}: a binary mask must hold only 0/1 or booleans")
        mask = mask.astype(bool)
    return mask


def check_same_shape(name: str, array: np.ndarray, reference: np.ndarray) -> None:
    """Raise a ValueError when ``array`` and the similarity matrix differ in shape."""
    if array.shape != reference.shape:
        raise ValueError(f"{name}: shape {array.shape} differs from sims shape {reference.shape}")


def check_k(name: str, k: int, n_gallery: int) -> int:
    """Return ``k`` as an int after checking 1 <= k <= n_gallery."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= n_gallery:
        raise ValueError(f"{name}: expected an integer in [1, {n_gallery}], got {k!r}")
    return int(k)


def check_ks(name: str, ks: Sequence[int], n_gallery: int) -> tuple[int, ...]:
    """Check a non-empty sequence of cut-offs; each must lie in [1, n_gallery]."""
    if len(ks) == 0:
        raise ValueError(f"{name}: expected at least one cut-off")
    return tuple(check_k(name, k, n_gallery) for k in ks)


def check_chunk_size(chunk_size: int) -> int:
    """Return ``chunk_size`` (queries per chunk) after checking it is a positive integer."""
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
        raise ValueError(f"chunk_size: expected a positive integer, got {chunk_size!r}")
    return int(chunk_size)


def as_image_index(img_of_cap: Any, n_images: int, n_captions: int) -> np.ndarray:
    """Check the caption -> image index vector: shape (n_captions,), integers in [0, n_images)."""
    if hasattr(img_of_cap, "detach"):
        img_of_cap = img_of_cap.detach().cpu().numpy()
    index = np.asarray(img_of_cap)
    if index.shape != (n_captions,):
        raise ValueError(f"img_of_cap: expected shape ({n_captions},), got {index.shape}")
    if not np.issubdtype(index.dtype, np.integer):
        raise ValueError(f"img_of_cap: expected integer image indices, got dtype {index.dtype}")
    bad = np.flatnonzero((index < 0) | (index >= n_images))
    if bad.size:
        raise ValueError(f"img_of_cap: captions {bad[:5].tolist()} point outside [0, {n_images})")
    return index.astype(np.int64)
