"""LSEH: VSE++ with a semantic term λ·cos(D'_i, D'_j) added to each negative's similarity."""

from __future__ import annotations

import torch
from torch import Tensor

from vse_ray.losses.base import BaseVSELoss, check_non_negative, given
from vse_ray.losses.hinge import max_of_hinges, positive_sims

FACTORS = ("cosine", "row_max")
SAME_IMAGE = ("exclude", "zero_margin")


def row_max_factor(relevance: Tensor) -> Tensor:
    """f[i, j] = r[j, i] / max_k r[i, k] (a zero maximum counts as 1), the released code's
    ``torch_cosine_sim``: (r / max_k r[·, k]).T divides column j by row j's maximum, by broadcasting, before
    the transpose. It is the cosine when ``relevance`` is the cosine matrix (row maximum 1)."""
    top = relevance.amax(-1, keepdim=True)
    return relevance.T / torch.where(top == 0, torch.ones_like(top), top)


class LSEHLoss(BaseVSELoss):
    """Semantically-enhanced hard negatives loss, LSEH paper eq. 8, both directions.

    LSEH(v_i, u_i) = max_j [α + s(v_i, u_j) + λ f(i, j) - s(v_i, u_i)]_+
                   + max_j [α + s(u_i, v_j) + λ f(j, i) - s(v_i, u_i)]_+

    with f(i, j) = s(D'_i, D'_j). ``relevance[i, j]`` is s(D'_i, D'_j), the cosine of the TF-IDF + truncated
    SVD caption vectors (eq. 5-7); the hardest negative is taken on the enhanced score. λ = 0 gives VSE++
    (eq. 6).

    The authors' released code (yangong23/VSEnetworksLSEH, ``ContrastiveLossLSEH``) differs in two ways
    the paper does not print, each an option here:

    - ``factor="row_max"``: f(i, j) = r[j, i] / max_k r[i, k], the dot product of the raw (not normalised)
      SVD vectors divided by the row maximum (``torch_cosine_sim``); ``relevance`` must then hold the raw
      dot products. On a cosine matrix (row maximum 1) it equals the cosine.
    - ``same_image="zero_margin"``: the other captions of a query's image stay negatives with margin 0 and
      no semantic term (its ``map``), instead of being left out. It needs ``image_ids``; without them every
      off-diagonal pair is a negative, as in the released code's batches of distinct images.

    Args:
        margin: α (default 0.185).
        lam: λ (default 0.025).
        factor: "cosine" (default, eq. 6-7) or "row_max" (released code).
        same_image: "exclude" (default) or "zero_margin" (released code).
        reduction: see BaseVSELoss.
        relevance_source: see BaseVSELoss (default 'svd').
    """

    relevance_source = "svd"

    def __init__(
        self,
        margin: float = 0.185,
        lam: float = 0.025,
        factor: str = "cosine",
        same_image: str = "exclude",
        reduction: str = "sum",
        relevance_source: str | None = None,
    ) -> None:
        super().__init__(reduction, relevance_source)
        check_non_negative(margin=margin, lam=lam)
        if factor not in FACTORS:
            raise ValueError(f"factor must be one of {FACTORS}, got {factor!r}")
        if same_image not in SAME_IMAGE:
            raise ValueError(f"same_image must be one of {SAME_IMAGE}, got {same_image!r}")
        self.margin, self.lam, self.factor, self.same_image = margin, lam, factor, same_image

    def compute_loss(self, sims: Tensor, relevance: Tensor | None, neg_mask: Tensor) -> Tensor:
        """Per-pair loss (B,) of both directions, the semantic factor f in place of ``relevance``."""
        relevance = given(relevance)
        factor = row_max_factor(relevance) if self.factor == "row_max" else relevance
        if self.same_image == "exclude":
            return super().compute_loss(sims, factor, neg_mask)
        off_diagonal = ~torch.eye(sims.shape[0], dtype=torch.bool, device=sims.device)
        # negatives: α + λ f on top of the similarity; the same image's other captions: the similarity alone
        enhanced = sims + torch.where(neg_mask, self.margin + self.lam * factor, 0.0)
        stacked = torch.stack((enhanced, enhanced.T))
        candidates = torch.stack((off_diagonal, off_diagonal))
        positive = positive_sims(torch.stack((sims, sims.T)))
        return max_of_hinges(stacked, positive, candidates, 0.0).sum(0)

    def query_loss(self, sims: Tensor, relevance: Tensor | None, candidates: Tensor) -> Tensor:
        return max_of_hinges(sims + self.lam * given(relevance), positive_sims(sims), candidates, self.margin)
