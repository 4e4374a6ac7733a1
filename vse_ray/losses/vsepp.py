"""VSE++: max of hinges, i.e. the hardest in-batch negative."""

from __future__ import annotations

from torch import Tensor

from vse_ray.losses.base import MarginVSELoss
from vse_ray.losses.hinge import max_of_hinges, positive_sims


class VSEPPLoss(MarginVSELoss):
    """Max-of-hinges triplet loss, VSE++ paper eq. 6 (ℓ_MH), both directions.

    ℓ_MH(i, c) = max_c' [α + s(i, c') - s(i, c)]_+ + max_i' [α + s(i', c) - s(i, c)]_+

    Args:
        margin: α (default 0.2).
        reduction: see BaseVSELoss.
    """

    def query_loss(self, sims: Tensor, relevance: Tensor | None, candidates: Tensor) -> Tensor:
        return max_of_hinges(sims, positive_sims(sims), candidates, self.margin)

    def collapse_value(self, batch_size: int) -> float | None:
        """The loss of a collapsed embedding (every similarity equal): each of the 2·B queries pays the
        margin against its hardest negative. Training that sits here has not left collapse (VSE++ Sec. 4.1);
        a warm-up with the sum of hinges is the cure."""
        per_pair = 2 * self.margin
        return {"sum": per_pair * batch_size, "mean": per_pair}.get(self.reduction)
