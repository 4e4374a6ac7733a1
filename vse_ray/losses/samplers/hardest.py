"""Hardest negative: the candidate most similar to the query."""

from __future__ import annotations

from torch import Tensor

from vse_ray.losses.samplers.base import BaseSampler, Selection, best_column


class HardestSampler(BaseSampler):
    """Pick argmax_j s(q, j) over the candidates (VSE++ eq. 6; SAM "HN", Sec. 5.4; ladder eq. 8's j*)."""

    def select(self, scores: Tensor, candidates: Tensor) -> Selection:
        return best_column(scores, candidates)
