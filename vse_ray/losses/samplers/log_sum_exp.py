"""Soft hardest negative: a masked log-sum-exp (smooth maximum) of the candidates' similarities."""

from __future__ import annotations

import torch
from torch import Tensor

from vse_ray.losses.samplers.base import check_scores_and_mask


def masked_logsumexp(values: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """log Σ_{j: mask} exp(values_j) over the last dim, with finite gradients on empty rows.

    Returns:
        (result (...,), valid (...,)); rows with no True entry give 0 and valid False.
    """
    check_scores_and_mask(values, mask, "mask")
    filled = values.masked_fill(~mask, torch.finfo(values.dtype).min)
    valid = mask.any(-1)
    return torch.where(valid, filled.logsumexp(-1), values.new_zeros(())), valid


def soft_hardest_similarity(scores: Tensor, candidates: Tensor, gamma: float) -> tuple[Tensor, Tensor]:
    """(1/γ) log Σ_j exp(γ s(q, j)) over the candidates (BCLS eq. 15); tends to max_j s(q, j) as γ → ∞."""
    value, valid = masked_logsumexp(gamma * scores, candidates)
    return value / gamma, valid
