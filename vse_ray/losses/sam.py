"""SAM: triplet loss with a semantic adaptive margin from a captioning metric (CIDEr)."""

from __future__ import annotations

import torch
from torch import Tensor

from vse_ray.losses.base import BaseVSELoss, check_non_negative, given
from vse_ray.losses.hinge import max_of_hinges, positive_sims
from vse_ray.losses.samplers import (
    BaseSampler,
    FurthestSampler,
    HardestSampler,
    RandomSampler,
    Selection,
)

SAMPLERS: dict[str, type[BaseSampler]] = {"rs": RandomSampler, "hn": HardestSampler, "sn": FurthestSampler}
RELEASED_SAMPLINGS = ("soft", "hard", "random")
READINGS = ("paper", "released")
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

    Eq. 7 as printed swaps the negative indices of the two margins; with ``reading="paper"`` each margin
    belongs to its own sampled negative. Sampling: "rs" a random negative, "hn" the closest (hardest),
    "sn" the furthest - as defined in Sec. 5.4.

    ``reading="released"`` computes the authors' released loss (``ContrastiveLossMetric`` of
    AndresPMD/semantic_adaptive_margin), which the paper does not print. Its ``--metric_samples`` help
    calls "soft" the Soft Negative (the paper's "SN", defined there as the furthest negative). Over the
    candidates (``neg_mask``) of each row:

    - image->text: per image i, caption n = the second-ranked column of s(i, ·) over {i} ∪ candidates
      ("soft"; "hard": the second-lowest; "random": a uniformly random candidate); so "soft" takes the
      hardest negative once the positive ranks first, and the positive itself (a constant hinge) when it
      ranks second;
    - text->image: per image i (as the negative), the caption query m ranked second by s(i, m) - s(m, m)
      over {i} ∪ candidates (the same three rules), with hinge [α + s(i, m) - s(m, m)]_+;
    - the margins: each image j has a_j = (φ(G_j, c_j) - φ(G_j, c_m')) / τ with m' its own text->image
      pick, and b_j = (φ(G_j, c_j) - φ(G_j, c_n')) / τ with n' its own image->text pick (eq. 7's crossed
      indices); the released code adds these (B,) vectors to the (B, B) hinge matrices, which broadcasts
      them over the columns, so the image->text hinge of image i takes a_n (n: its picked caption) and the
      text->image hinge takes b_m (m: its picked caption query).

    The released code also clips the margins at 1 (``margin_clip=1``) and weights this term
    (``--cider_weight``, 5 in its Flickr30K command: ``weight=5``); its triplet is VSE++ on the same batch.

    Args:
        tau: temperature τ > 0 (default 5; the released ``--metric_div``).
        sampling: reading "paper": "rs" | "hn" | "sn" (default "sn"); reading "released": "soft" | "hard" |
            "random" (its ``--metric_samples``).
        triplet: also add the plain VSE++ triplet (eq. 6) with ``triplet_margin`` (default True).
        triplet_margin: margin of that triplet (default 0.2).
        t2i_margin: "eq7" | "negative_refs", the text->image margin of reading "paper" (see above).
        reading: "paper" (default) or "released" (see above).
        margin_clip: upper bound of every margin α (the released code: 1); None (default) leaves them as
            they are.
        weight: factor of the SAM term, not of the triplet (default 1).
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
        reading: str = "paper",
        margin_clip: float | None = None,
        weight: float = 1.0,
        reduction: str = "sum",
        relevance_source: str | None = None,
    ) -> None:
        super().__init__(reduction, relevance_source)
        if tau <= 0:
            raise ValueError(f"tau must be > 0, got {tau}")
        if reading not in READINGS:
            raise ValueError(f"reading must be one of {READINGS}, got {reading!r}")
        samplings = RELEASED_SAMPLINGS if reading == "released" else tuple(SAMPLERS)
        if sampling not in samplings:
            raise ValueError(f"sampling must be one of {samplings} for reading {reading!r}, got {sampling!r}")
        if t2i_margin not in T2I_MARGINS:
            raise ValueError(f"t2i_margin must be one of {T2I_MARGINS}, got {t2i_margin!r}")
        if reading == "released" and t2i_margin != "eq7":
            raise ValueError("t2i_margin: the released reading has its own margins; leave it at 'eq7'")
        check_non_negative(triplet_margin=triplet_margin, weight=weight)
        self.t2i_margin, self.reading, self.margin_clip, self.weight = (
            t2i_margin,
            reading,
            margin_clip,
            weight,
        )
        self.tau, self.sampling, self.triplet, self.triplet_margin = tau, sampling, triplet, triplet_margin
        # the released "soft" / "hard" rank the positive too (_released_pick); its "random" is RS
        self.sampler: BaseSampler | None = (
            RandomSampler()
            if sampling == "random"
            else SAMPLERS[sampling]()
            if sampling in SAMPLERS
            else None
        )

    def compute_loss(self, sims: Tensor, relevance: Tensor | None, neg_mask: Tensor) -> Tensor:
        """Per-pair loss (B,); with "eq7" the text->image margins read ``relevance`` as image->text does."""
        relevance = given(relevance)
        if self.reading == "released":
            loss = self.weight * self._released_terms(sims, relevance, neg_mask)
            if self.triplet:
                stacked = torch.stack((sims, sims.T))
                candidates = torch.stack((neg_mask, neg_mask.T))
                triplets = max_of_hinges(stacked, positive_sims(stacked), candidates, self.triplet_margin)
                loss = loss + triplets.sum(0)
            return loss
        if self.t2i_margin == "negative_refs":
            return super().compute_loss(sims, relevance, neg_mask)
        stacked_sims, stacked_relevance = torch.stack((sims, sims.T)), torch.stack((relevance, relevance))
        return self.query_loss(stacked_sims, stacked_relevance, torch.stack((neg_mask, neg_mask.T))).sum(0)

    def query_loss(self, sims: Tensor, relevance: Tensor | None, candidates: Tensor) -> Tensor:
        relevance = given(relevance)
        positive = positive_sims(sims)
        pick = self._sampler()(sims, candidates)
        margin = self._clip((positive_sims(relevance).unsqueeze(-1) - pick.gather(relevance)) / self.tau)
        hinge = (margin + pick.gather(sims) - positive.unsqueeze(-1)).clamp(min=0) * pick.valid
        loss = self.weight * hinge.squeeze(-1)
        if self.triplet:
            loss = loss + max_of_hinges(sims, positive, candidates, self.triplet_margin)
        return loss

    def _sampler(self) -> BaseSampler:
        """The sampler of a reading that picks with one (the released "soft" / "hard" rank instead)."""
        if self.sampler is None:
            raise ValueError(f"sampling {self.sampling!r}: the released reading ranks, it has no sampler")
        return self.sampler

    def _clip(self, margin: Tensor) -> Tensor:
        return margin if self.margin_clip is None else margin.clamp(max=self.margin_clip)

    def _released_terms(self, sims: Tensor, relevance: Tensor, neg_mask: Tensor) -> Tensor:
        """The released SAM term of each image row i (image->text hinge plus text->image hinge), (B,)."""
        positive = positive_sims(sims)
        i2t = sims - positive.unsqueeze(1)  # s(i, j) - s(i, i): image i queries caption j
        t2i = sims - positive.unsqueeze(0)  # s(i, j) - s(j, j): caption j queries image i
        pick_i2t, pick_t2i = self._released_pick(i2t, neg_mask), self._released_pick(t2i, neg_mask)
        phi_positive = positive_sims(relevance).unsqueeze(1)
        # image j's margin from its own pick of the other direction, then read at the picked column
        margin_of_caption = self._clip((phi_positive - pick_t2i.gather(relevance)) / self.tau).squeeze(-1)
        margin_of_image = self._clip((phi_positive - pick_i2t.gather(relevance)) / self.tau).squeeze(-1)
        margin_i2t, margin_t2i = margin_of_caption[pick_i2t.columns], margin_of_image[pick_t2i.columns]
        hinge_i2t = (pick_i2t.gather(i2t) + margin_i2t).clamp(min=0) * pick_i2t.valid
        hinge_t2i = (pick_t2i.gather(t2i) + margin_t2i).clamp(min=0) * pick_t2i.valid
        return (hinge_i2t + hinge_t2i).squeeze(-1)

    def _released_pick(self, keys: Tensor, candidates: Tensor) -> Selection:
        """Column per row of ``keys`` (B, B): "random" among the candidates, else the second-highest
        ("soft") or second-lowest ("hard") over the candidates and the row's own diagonal column."""
        if self.sampling == "random":
            return self._sampler()(keys, candidates)
        ranked = candidates | torch.eye(keys.shape[0], dtype=torch.bool, device=keys.device)
        valid = ranked.sum(-1, keepdim=True) >= 2
        if keys.shape[-1] < 2:
            return Selection(torch.zeros_like(valid, dtype=torch.int64), valid)
        largest = self.sampling == "soft"
        with torch.no_grad():
            fill = float("-inf") if largest else float("inf")
            order = keys.detach().masked_fill(~ranked, fill).topk(2, dim=-1, largest=largest).indices
        return Selection(order[..., 1:], valid)
