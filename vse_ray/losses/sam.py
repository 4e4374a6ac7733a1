"""SAM: triplet loss with a semantic adaptive margin from a captioning metric (CIDEr)."""

from __future__ import annotations

import torch
from torch import Tensor

from vse_ray.losses.base import BaseVSELoss, check_non_negative
from vse_ray.losses.hinge import max_of_hinges, positive_sims
from vse_ray.losses.samplers import BaseSampler, FurthestSampler, HardestSampler, RandomSampler

SAMPLERS: dict[str, type[BaseSampler]] = {"rs": RandomSampler, "hn": HardestSampler, "sn": FurthestSampler}
T2I_MARGINS = ("eq7", "negative_refs")


class SAMLoss(BaseVSELoss):
    """Semantic Adaptive Margin, SAM paper eq. 7, with RS / HN / SN negative sampling (Sec. 5.4).

    For query q and one sampled negative n: [α_qn + s(q, n) - s(q, q)]_+ with α_qn = (φ_qq - φ_qn) / τ,
    where φ = ``relevance`` (rows: images, ``relevance[i, j]`` = φ(G_i, c_j), e.g. CIDEr of caption j against
    the references G_i of image i). Image->text (query image p, negative caption n) uses
    α = (φ(G_p, c_p) - φ(G_p, c_n)) / τ. Text->image (query caption p, negative image n, whose caption in
    the batch is c_n) depends on ``t2i_margin``:

    - ``"eq7"`` (default): (φ(G_p, c_p) - φ(G_p, c_n)) / τ, the references of the positive image G_p in
      both directions, as eq. 7 and the authors' code (``ContrastiveLossMetric``) have it;
    - ``"negative_refs"``: (φ(G_p, c_p) - φ(G_n, c_p)) / τ, the query caption judged by the negative
      image's references (``relevance.T``); it differs from "eq7" only where φ is not symmetric (CIDEr).

    Eq. 7 as printed swaps the negative indices of the two margins (the authors' code does too); here each
    margin belongs to its own sampled negative. Margins are not clipped (the authors' code clips them at 1).

    Sampling: "rs" a random negative, "hn" the closest (hardest), "sn" the furthest - as defined in Sec. 5.4.

    Args:
        tau: temperature τ > 0 (default 5).
        sampling: "rs" | "hn" | "sn" (default "sn").
        triplet: also add the plain VSE++ triplet (eq. 6) with ``triplet_margin`` (default True).
        triplet_margin: margin of that triplet (default 0.2).
        t2i_margin: "eq7" | "negative_refs", the text->image margin (see above).
        reduction: see BaseVSELoss.
        relevance_source: see BaseVSELoss (default 'cider').
    """

    relevance_source = "cider"

    def __init__(
        self,
        tau: float = 5.0,
        sampling: str = "sn",
        triplet: bool = True,
        triplet_margin: float = 0.2,
        t2i_margin: str = "eq7",
        reduction: str = "sum",
        relevance_source: str | None = None,
    ) -> None:
        super().__init__(reduction, relevance_source)
        if tau <= 0:
            raise ValueError(f"tau must be > 0, got {tau}")
        if sampling not in SAMPLERS:
            raise ValueError(f"sampling must be one of {tuple(SAMPLERS)}, got {sampling!r}")
        if t2i_margin not in T2I_MARGINS:
            raise ValueError(f"t2i_margin must be one of {T2I_MARGINS}, got {t2i_margin!r}")
        check_non_negative(triplet_margin=triplet_margin)
        self.t2i_margin = t2i_margin
        self.tau, self.sampling, self.triplet, self.triplet_margin = tau, sampling, triplet, triplet_margin
        self.sampler = SAMPLERS[sampling]()

    def compute_loss(self, sims: Tensor, relevance: Tensor | None, neg_mask: Tensor) -> Tensor:
        """Per-pair loss (B,); with "eq7" the text->image margins read ``relevance`` as image->text does."""
        if self.t2i_margin == "negative_refs":
            return super().compute_loss(sims, relevance, neg_mask)
        stacked = (torch.stack((sims, sims.T)), torch.stack((relevance, relevance)))
        return self.query_loss(*stacked, torch.stack((neg_mask, neg_mask.T))).sum(0)

    def query_loss(self, sims: Tensor, relevance: Tensor | None, candidates: Tensor) -> Tensor:
        positive = positive_sims(sims)
        pick = self.sampler(sims, candidates)
        margin = (positive_sims(relevance).unsqueeze(-1) - pick.gather(relevance)) / self.tau
        hinge = (margin + pick.gather(sims) - positive.unsqueeze(-1)).clamp(min=0) * pick.valid
        loss = hinge.squeeze(-1)
        if self.triplet:
            loss = loss + max_of_hinges(sims, positive, candidates, self.triplet_margin)
        return loss
