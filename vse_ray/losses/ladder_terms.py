"""Ladder loss terms (ladder paper eq. 6-8) for given relevance levels of the negatives."""

from __future__ import annotations

import torch
from torch import Tensor

from vse_ray.losses.base import BaseVSELoss, check_non_negative, given
from vse_ray.losses.samplers import HardContrastivePairSampler


def level_sets(levels: Tensor, n_levels: int) -> tuple[Tensor, Tensor]:
    """Upper and lower candidate sets of ladder terms l = 1..L, each (L, ..., Q, C) bool.

    ``levels`` (..., Q, Q) holds 1..L for negatives (1 = most relevant, the set N_1^{-q}) and 0 elsewhere.
    Term l compares the upper set N_{l-1}^{-q} - the positive itself for l = 1 - against the lower set
    N_{l:L}^{-q}, as in eq. 7 (L^1 over i in N_{1:L}, L^2 over i in N_1 and j in N_{2:L}, ...).
    """
    ids = torch.arange(1, n_levels + 1, device=levels.device).view(-1, *([1] * levels.dim()))
    eye = torch.eye(levels.shape[-1], dtype=torch.bool, device=levels.device)
    upper = torch.where(ids == 1, eye, levels == ids - 1)
    lower = levels >= ids
    return upper, lower


def ladder_terms(
    sims: Tensor, levels: Tensor, margins: Tensor, betas: Tensor, hard_contrastive: bool
) -> Tensor:
    """Σ_l β_l L^l_lad(q) per query (eq. 6), shape (..., Q); L = len(margins) = len(betas).

    With ``hard_contrastive`` each term is one hinge on the hard-contrastive pair (eq. 8, margin α_l:
    the printed α_1 there is read as the term's own α_l, as in the authors' code):
    [α_l - min_{i in upper} s_qi + max_{j in lower} s_qj]_+, 0 when either set is empty. Otherwise the full
    sum over all (i, j) pairs of eq. 7. L^1 is then the VSE++ (eq. 6) resp. VSE0 (eq. 5) triplet.
    """
    n_levels = margins.shape[0]
    if hard_contrastive:
        i_star, j_star = HardContrastivePairSampler().per_level(sims, levels, n_levels)
        hinge = (margins - i_star.gather(sims) + j_star.gather(sims)).clamp(min=0)
        return (hinge * (i_star.valid & j_star.valid)) @ betas
    upper, lower = level_sets(levels, n_levels)
    per_level = torch.stack(
        [
            (
                (margins[level] - sims.unsqueeze(-1) + sims.unsqueeze(-2)).clamp(min=0)
                * (upper[level].unsqueeze(-1) & lower[level].unsqueeze(-2))
            ).sum((-1, -2))
            for level in range(n_levels)
        ]
    )
    return (betas.view(-1, *([1] * (sims.dim() - 1))) * per_level).sum(0)


class BaseLadderLoss(BaseVSELoss):
    """Ladder loss on per-query relevance levels; subclasses say how negatives are split (``levels``).

    Args:
        margins: α_1..α_L, >= 0.
        betas: β_1..β_L, >= 0.
        hard_contrastive: eq. 8 sampling, or the full sums of eq. 7.
        reduction: see BaseVSELoss.
        relevance_source: see BaseVSELoss (default 'sbert').
    """

    margins: Tensor
    betas: Tensor

    relevance_source = "sbert"

    def __init__(
        self,
        margins: tuple[float, ...],
        betas: tuple[float, ...],
        hard_contrastive: bool,
        reduction: str,
        relevance_source: str | None = None,
    ) -> None:
        super().__init__(reduction, relevance_source)
        if len(margins) != len(betas):
            raise ValueError(
                f"margins and betas must have the same length, got {len(margins)} and {len(betas)}"
            )
        check_non_negative(margins=tuple(margins), betas=tuple(betas))
        self.hard_contrastive = hard_contrastive
        self.register_buffer("margins", torch.tensor(margins, dtype=torch.float64), persistent=False)
        self.register_buffer("betas", torch.tensor(betas, dtype=torch.float64), persistent=False)

    def levels(self, relevance: Tensor, candidates: Tensor) -> Tensor:
        """Ladder level 1..L of each negative, 0 elsewhere; (..., Q, C)."""
        raise NotImplementedError

    def query_loss(self, sims: Tensor, relevance: Tensor | None, candidates: Tensor) -> Tensor:
        levels = self.levels(given(relevance), candidates)
        margins, betas = (w.to(sims.device, sims.dtype) for w in (self.margins, self.betas))
        return ladder_terms(sims, levels, margins, betas, self.hard_contrastive)
