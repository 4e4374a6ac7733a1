"""VSE∞'s size augmentation of region features, drawn in the data path as the reference dataset draws it."""

from __future__ import annotations

import numpy as np


def draw_region_keep(images: int, regions: int, rate: float, rng: np.random.Generator) -> np.ndarray:
    """(images, regions) bool: each region of each training image kept independently when its uniform
    draw exceeds `rate` (the reference's ``rand > 0.2``), so the kept count is Binomial(regions, 1 - rate).
    An image that drew no region keeps its first (probability ``rate ** regions``; the reference would pool
    an empty set)."""
    keep = rng.random((images, regions)) > rate
    keep[:, 0] |= ~keep.any(axis=1)
    return keep
