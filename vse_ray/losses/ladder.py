"""Ladder loss with manual relevance thresholds (CVSE++)."""

from __future__ import annotations

import torch
from torch import Tensor

from vse_ray.losses.ladder_terms import BaseLadderLoss


def threshold_levels(relevance: Tensor, candidates: Tensor, thresholds: Tensor) -> Tensor:
    """Level of each negative: 1 where r >= θ_1, l where θ_l <= r < θ_{l-1}, L below θ_{L-1}; 0 elsewhere."""
    levels = candidates.long()
    for threshold in thresholds:  # one comparison per threshold: no (..., Q, C, L - 1) intermediate
        levels += (relevance < threshold) & candidates
    return levels


class LadderLoss(BaseLadderLoss):
    """Ladder loss, ladder paper eq. 5-8 (CVSE++), both directions, manual thresholds θ.

    The negatives N^{-q} of each query are split by relevance into L = len(thresholds) + 1 levels
    (N_1 most relevant); term l pushes the level-(l-1) items (the positive for l = 1) above levels l..L by
    α_l, weighted by β_l. With β_2 = ... = β_L = 0 it is VSE++ (hard-contrastive) or VSE0 (full sums).
    Relevance: S-BERT cosine between the query's own caption and each caption (eq. 1). Sets follow eq. 7;
    the authors' code instead compares cumulative upper sets (levels 1..l-1 plus the positive) with level l+.

    Args:
        thresholds: θ_1 > θ_2 > ... (default (0.40,), the paper's S-BERT setting).
        margins: α_1..α_L (default (0.2, 0.01)).
        betas: β_1..β_L (default (1.0, 0.25)).
        hard_contrastive: eq. 8 sampling (default) or the full sums of eq. 7.
        reduction: see BaseVSELoss.
    """

    def __init__(
        self,
        thresholds: tuple[float, ...] = (0.40,),
        margins: tuple[float, ...] = (0.2, 0.01),
        betas: tuple[float, ...] = (1.0, 0.25),
        hard_contrastive: bool = True,
        reduction: str = "sum",
    ) -> None:
        thresholds = tuple(thresholds)
        if any(a <= b for a, b in zip(thresholds, thresholds[1:], strict=False)):
            raise ValueError(f"thresholds must be strictly decreasing, got {thresholds}")
        if len(margins) != len(thresholds) + 1:
            raise ValueError(
                f"margins need len(thresholds) + 1 = {len(thresholds) + 1} entries, got {len(margins)}"
            )
        super().__init__(tuple(margins), tuple(betas), hard_contrastive, reduction)
        self.register_buffer("thresholds", torch.tensor(thresholds, dtype=torch.float64), persistent=False)

    def levels(self, relevance: Tensor, candidates: Tensor) -> Tensor:
        return threshold_levels(relevance, candidates, self.thresholds.to(relevance.device, relevance.dtype))
