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


def quantile_thresholds(relevance: Tensor, candidates: Tensor, quantiles: Tensor) -> Tensor:
    """θ_l = the q_l-quantile (numpy's default "linear" rule) of the relevance of the batch's negatives.

    The negatives are the candidates of the first query-major matrix of ``relevance`` (the image->text
    direction when both directions are stacked), so each of the B(B-1) negative pairs counts once.
    """
    rows = relevance.shape[-2]
    first = relevance.reshape(-1, rows, relevance.shape[-1])[0]
    values = first[candidates.reshape(-1, rows, candidates.shape[-1])[0]]
    if values.numel() == 0:  # no negatives: any threshold gives the same (empty) levels
        return torch.zeros_like(quantiles, dtype=relevance.dtype)
    return torch.quantile(values, quantiles.to(values.dtype))


def _checked_quantiles(theta_quantile: float | tuple[float, ...]) -> tuple[float, ...]:
    quantiles = tuple(theta_quantile) if isinstance(theta_quantile, tuple | list) else (theta_quantile,)
    if not quantiles or any(not isinstance(q, int | float) or not 0.0 < q < 1.0 for q in quantiles):
        raise ValueError(f"theta_quantile must be in (0, 1) (one value or a tuple), got {theta_quantile!r}")
    if any(a <= b for a, b in zip(quantiles, quantiles[1:], strict=False)):
        raise ValueError(f"theta_quantile must be strictly decreasing (θ_1 > θ_2 > ...), got {quantiles}")
    return tuple(float(q) for q in quantiles)


class LadderLoss(BaseLadderLoss):
    """Ladder loss, ladder paper eq. 5-8 (CVSE++), both directions, manual thresholds θ.

    The negatives N^{-q} of each query are split by relevance into L = len(thresholds) + 1 levels
    (N_1 most relevant); term l pushes the level-(l-1) items (the positive for l = 1) above levels l..L by
    α_l, weighted by β_l. With β_2 = ... = β_L = 0 it is VSE++ (hard-contrastive) or VSE0 (full sums).
    Relevance: S-BERT cosine between the query's own caption and each caption (eq. 1). Sets follow eq. 7;
    the authors' code instead compares cumulative upper sets (levels 1..l-1 plus the positive) with level l+.

    The thresholds are absolute relevance values (``thresholds``), or quantiles of each batch's relevance
    (``theta_quantile``): θ_l is then recomputed per batch as the q_l-quantile of the relevance of its
    negative pairs (:func:`quantile_thresholds`), so that a fixed share of the negatives is "relevant"
    whatever the scale of the relevance source.

    Args:
        thresholds: θ_1 > θ_2 > ... (default (0.40,), the paper's S-BERT setting, when ``theta_quantile``
            is not given).
        theta_quantile: q_1 > q_2 > ... in (0, 1) (one float for L = 2) instead of ``thresholds``.
        margins: α_1..α_L (default (0.2, 0.01)).
        betas: β_1..β_L (default (1.0, 0.25)).
        hard_contrastive: eq. 8 sampling (default) or the full sums of eq. 7.
        reduction: see BaseVSELoss.
        relevance_source: see BaseVSELoss (default 'sbert').
    """

    thresholds: Tensor
    quantiles: Tensor | None

    def __init__(
        self,
        thresholds: tuple[float, ...] | None = None,
        margins: tuple[float, ...] = (0.2, 0.01),
        betas: tuple[float, ...] = (1.0, 0.25),
        hard_contrastive: bool = True,
        reduction: str = "sum",
        relevance_source: str | None = None,
        theta_quantile: float | tuple[float, ...] | None = None,
    ) -> None:
        if thresholds is not None and theta_quantile is not None:
            raise ValueError("give either thresholds or theta_quantile, not both")
        quantiles = _checked_quantiles(theta_quantile) if theta_quantile is not None else None
        thresholds = tuple(thresholds) if thresholds is not None else (0.40,)
        if any(a <= b for a, b in zip(thresholds, thresholds[1:], strict=False)):
            raise ValueError(f"thresholds must be strictly decreasing, got {thresholds}")
        n_thresholds = len(quantiles) if quantiles is not None else len(thresholds)
        if len(margins) != n_thresholds + 1:
            raise ValueError(
                f"margins need len(thresholds) + 1 = {n_thresholds + 1} entries, got {len(margins)}"
            )
        super().__init__(tuple(margins), tuple(betas), hard_contrastive, reduction, relevance_source)
        self.theta_quantile = quantiles
        self.register_buffer("thresholds", torch.tensor(thresholds, dtype=torch.float64), persistent=False)
        quantile_buffer = None if quantiles is None else torch.tensor(quantiles, dtype=torch.float64)
        self.register_buffer("quantiles", quantile_buffer, persistent=False)

    def levels(self, relevance: Tensor, candidates: Tensor) -> Tensor:
        if self.quantiles is None:
            thresholds = self.thresholds.to(relevance.device, relevance.dtype)
        else:
            thresholds = quantile_thresholds(relevance, candidates, self.quantiles)
        return threshold_levels(relevance, candidates, thresholds)
