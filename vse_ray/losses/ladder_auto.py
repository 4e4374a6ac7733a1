"""Adaptive ladder loss: ladder levels from per-query K-Means + Silhouette instead of thresholds."""

from __future__ import annotations

from torch import Tensor

from vse_ray.losses.kernels.clustering import adaptive_levels
from vse_ray.losses.kernels.clustering.adaptive_levels import KMEANS
from vse_ray.losses.ladder_terms import BaseLadderLoss


def extend_to(values: tuple[float, ...], length: int, name: str, halve: bool) -> tuple[float, ...]:
    """Pad ``values`` to ``length`` by repeating (margins) or halving (betas, β_i = 1/2^i) the last entry."""
    if not 1 <= len(values) <= length:
        raise ValueError(f"{name} needs 1..l_max = {length} entries, got {len(values)}")
    out = list(values)
    while len(out) < length:
        out.append(out[-1] / 2 if halve else out[-1])
    return tuple(out)


class AdaptiveLadderLoss(BaseLadderLoss):
    """Adaptive ladder loss, ladder paper Sec. III-C (eq. 9-12), both directions.

    Per query, the negatives are grouped by 1-D K-Means on their relevance with L* in [L_MIN, L_MAX]
    chosen by the mean Silhouette (see ``adaptive_levels``); the ladder terms (eq. 6-8) then run with
    L = L*. Margins and weights shorter than l_max are extended: margins repeat their last value and
    weights halve per level, which reproduces the paper's α = (0.2, 0.01, 0.01, 0.01) and β_i = 1/2^i.

    Args:
        l_min: L_MIN >= 2 (default 2).
        l_max: L_MAX >= l_min (default 4).
        margins: α_1..α_{L_MAX} (default (0.2, 0.01, 0.01, 0.01)).
        betas: β_1..β_{L_MAX} (default (1, 1/4, 1/8, 1/16)).
        hard_contrastive: eq. 8 sampling (default) or full sums (eq. 7).
        kmeans: "exact" (default: the optimal 1-D clustering, by dynamic programming) or "lloyd" (Lloyd's
            algorithm from quantile centres, a fixed point that can be above the optimum).
        max_iter: Lloyd iteration cap of the K-Means.
        reduction: see BaseVSELoss.
        relevance_source: see BaseVSELoss (default 'sbert').
    """

    def __init__(
        self,
        l_min: int = 2,
        l_max: int = 4,
        margins: tuple[float, ...] = (0.2, 0.01, 0.01, 0.01),
        betas: tuple[float, ...] = (1.0, 0.25, 0.125, 0.0625),
        hard_contrastive: bool = True,
        kmeans: str = "exact",
        max_iter: int = 100,
        reduction: str = "sum",
        relevance_source: str | None = None,
    ) -> None:
        if l_min < 2:
            raise ValueError(f"l_min must be >= 2, got {l_min}")
        if l_max < l_min:
            raise ValueError(f"l_max must be >= l_min = {l_min}, got {l_max}")
        if kmeans not in KMEANS:
            raise ValueError(f"kmeans must be one of {KMEANS}, got {kmeans!r}")
        if max_iter < 1:
            raise ValueError(f"max_iter must be >= 1, got {max_iter}")
        margins = extend_to(tuple(margins), l_max, "margins", halve=False)
        betas = extend_to(tuple(betas), l_max, "betas", halve=True)
        super().__init__(margins, betas, hard_contrastive, reduction, relevance_source)
        self.l_min, self.l_max, self.kmeans, self.max_iter = l_min, l_max, kmeans, max_iter

    def levels(self, relevance: Tensor, candidates: Tensor) -> Tensor:
        """Levels 1..L* per query from ``adaptive_levels``, 0 on non-candidates; (..., Q, C)."""
        return adaptive_levels(relevance, candidates, self.l_min, self.l_max, self.max_iter, self.kmeans)[0]
