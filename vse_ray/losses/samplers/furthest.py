"""Furthest candidate: the one least similar to the query."""

from __future__ import annotations

from torch import Tensor

from vse_ray.losses.samplers.base import BaseSampler, Selection, best_column


class FurthestSampler(BaseSampler):
    """Pick argmin_j s(q, j) over the candidates (SAM "SN", Sec. 5.4; ladder eq. 8's i*; BCLS eq. 20's T~)."""

    def select(self, scores: Tensor, candidates: Tensor) -> Selection:
        return best_column(-scores, candidates)
