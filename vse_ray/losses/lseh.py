"""LSEH: VSE++ with a semantic term λ·cos(D'_i, D'_j) added to each negative's similarity."""

from __future__ import annotations

from torch import Tensor

from vse_ray.losses.base import BaseVSELoss, check_non_negative
from vse_ray.losses.hinge import max_of_hinges, positive_sims


class LSEHLoss(BaseVSELoss):
    """Semantically-enhanced hard negatives loss, LSEH paper eq. 8, both directions.

    LSEH(v_i, u_i) = max_j [α + s(v_i, u_j) + λ s(D'_i, D'_j) - s(v_i, u_i)]_+
                   + max_j [α + s(u_i, v_j) + λ s(D'_i, D'_j) - s(v_i, u_i)]_+

    ``relevance[i, j]`` is s(D'_i, D'_j), the cosine of the TF-IDF + truncated SVD caption vectors (eq. 5-7);
    the hardest negative is taken on the enhanced score. λ = 0 gives VSE++ (eq. 6).

    Args:
        margin: α (default 0.185).
        lam: λ (default 0.025).
        reduction: see BaseVSELoss.
        relevance_source: see BaseVSELoss (default 'svd').
    """

    relevance_source = "svd"

    def __init__(
        self,
        margin: float = 0.185,
        lam: float = 0.025,
        reduction: str = "sum",
        relevance_source: str | None = None,
    ) -> None:
        super().__init__(reduction, relevance_source)
        check_non_negative(margin=margin, lam=lam)
        self.margin, self.lam = margin, lam

    def query_loss(self, sims: Tensor, relevance: Tensor | None, candidates: Tensor) -> Tensor:
        return max_of_hinges(sims + self.lam * relevance, positive_sims(sims), candidates, self.margin)
