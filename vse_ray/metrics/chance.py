"""Recall of a random ranking: the floor a retrieval table is read against."""

from __future__ import annotations

import math
from collections.abc import Sequence


def chance_levels(n_images: int, n_captions: int, ks: Sequence[int] = (1, 5, 10)) -> dict[str, float]:
    """R^V@K of a random ranking (percent): i2t with c captions per image, t2i with one true image."""
    per_image = n_captions / n_images
    out = {}
    for k in ks:
        miss = math.prod((n_captions - per_image - j) / (n_captions - j) for j in range(k))
        out[f"R_at_{k}_i2t"] = 100 * (1 - miss)
        out[f"R_at_{k}_t2i"] = 100 * k / n_images
    out["rsum"] = sum(out.values())
    return out
