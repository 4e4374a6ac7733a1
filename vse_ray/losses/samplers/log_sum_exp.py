"""Soft hardest negative: a masked log-sum-exp (smooth maximum) of the candidates' similarities."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from vse_ray.losses.samplers.base import check_scores_and_mask


def masked_logsumexp(values: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """log Σ_{j: mask} exp(values_j) over the last dim, with finite gradients on empty rows.

    Computed as m + log Σ_j mask_j exp(values_j - m) with m the masked maximum, so no exponential of a
    huge negative fill value is taken (slow on CPU); masked-out entries are replaced by the floor below
    before the exponential and then multiplied by 0, and the maximum keeps its gradient. Exponents are
    floored at log(finfo.tiny) / 2 (about -44 in float32), so neither the exponentials nor their gradients
    are subnormal numbers (very slow on CPU); this changes the sum, which is at least 1, by less than
    C·sqrt(finfo.tiny), far below float rounding.

    Returns:
        (result (...,), valid (...,)); rows with no True entry give 0 and valid False.
    """
    check_scores_and_mask(values, mask, "mask")
    weight = mask.to(values.dtype)
    with torch.no_grad():
        top = (values + (weight - 1) * torch.finfo(values.dtype).max).amax(-1, keepdim=True)
    floor = math.log(torch.finfo(values.dtype).tiny) / 2
    shifted = torch.where(mask, values - top, floor).clamp(min=floor)
    total = (shifted.exp() * weight).sum(-1)
    valid = total > 0
    result = top.squeeze(-1) + torch.where(valid, total, 1.0).log()
    return torch.where(valid, result, 0.0), valid


def soft_hardest_similarity(scores: Tensor, candidates: Tensor, gamma: float) -> tuple[Tensor, Tensor]:
    """(1/γ) log Σ_j exp(γ s(q, j)) over the candidates (BCLS eq. 15); tends to max_j s(q, j) as γ → ∞."""
    value, valid = masked_logsumexp(gamma * scores, candidates)
    return value / gamma, valid
