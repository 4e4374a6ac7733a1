"""Uniformly random candidate per query."""

from __future__ import annotations

import torch
from torch import Tensor

from vse_ray.losses.samplers.base import BaseSampler, Selection, best_column


class RandomSampler(BaseSampler):
    """Pick a candidate uniformly at random per query (SAM "RS", Sec. 5.4).

    Args:
        generator: torch RNG to draw from; the global RNG when None.
    """

    def __init__(self, generator: torch.Generator | None = None) -> None:
        self.generator = generator

    def select(self, scores: Tensor, candidates: Tensor) -> Selection:
        keys = torch.rand(scores.shape, generator=self.generator, device=scores.device, dtype=scores.dtype)
        return best_column(keys, candidates)
