"""Hard-contrastive pair: the furthest member of an upper set against the closest member of a lower set."""

from __future__ import annotations

from torch import Tensor

from vse_ray.losses.samplers.base import Selection, check_scores_and_mask
from vse_ray.losses.samplers.furthest import FurthestSampler
from vse_ray.losses.samplers.hardest import HardestSampler


class HardContrastivePairSampler:
    """Ladder loss hard-contrastive sampling (ladder eq. 8), also BCLS hard-sample mining (eq. 20).

    For each query, ``i* = argmin_{i in upper} s(q, i)`` and ``j* = argmax_{j in lower} s(q, j)``.
    """

    def __call__(self, scores: Tensor, upper: Tensor, lower: Tensor) -> tuple[Selection, Selection]:
        """Return (upper selection, lower selection) for ``scores`` (..., Q, C) and two bool masks alike."""
        check_scores_and_mask(scores, upper, "upper")
        check_scores_and_mask(scores, lower, "lower")
        return FurthestSampler()(scores, upper), HardestSampler()(scores, lower)
