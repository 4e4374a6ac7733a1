"""VSE0: sum of hinges over all in-batch negatives."""

from __future__ import annotations

from torch import Tensor

from vse_ray.losses.base import MarginVSELoss
from vse_ray.losses.hinge import positive_sims, sum_of_hinges


class VSE0Loss(MarginVSELoss):
    """Sum-of-hinges triplet loss, VSE++ paper eq. 5 (ℓ_SH), both directions.

    ℓ_SH(i, c) = Σ_ĉ [α - s(i, c) + s(i, ĉ)]_+ + Σ_î [α - s(i, c) + s(î, c)]_+

    Args:
        margin: α (default 0.2).
        reduction: see BaseVSELoss.
    """

    def query_loss(self, sims: Tensor, relevance: Tensor | None, candidates: Tensor) -> Tensor:
        return sum_of_hinges(sims, positive_sims(sims), candidates, self.margin)
