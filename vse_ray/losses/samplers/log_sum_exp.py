"""Soft hardest negative: a masked log-sum-exp (smooth maximum) of the candidates' similarities."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from vse_ray.losses.samplers.base import check_scores_and_mask


def exponent_floor(dtype: torch.dtype) -> float:
    """log(finfo(dtype).tiny) / 2, the smallest exponent taken: no exponential or gradient is subnormal."""
    return math.log(torch.finfo(dtype).tiny) / 2


def masked_logsumexp(values: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """log Σ_{j: mask} exp(values_j) over the last dim, with finite gradients on empty rows; plain torch.

    Computed as m + log Σ_{j: mask} exp(values_j - m) with m the masked maximum (taken without gradient:
    the result's gradient is the softmax either way), so no exponential of a huge negative fill value is
    taken. Exponents are floored at ``exponent_floor`` (about -44 in float32), so neither the exponentials
    nor their gradients are subnormal numbers (very slow on CPU); this changes the sum, which is at least 1,
    by less than C·sqrt(finfo.tiny), far below float rounding. The gradient is grad · exp(values_j - m) / Σ,
    the softmax weights of the candidates, 0 for floored entries (the floor's slope is 0). A NaN in a row
    makes its maximum, and so its result, NaN.

    Returns:
        (result (...,), valid (...,)); rows with no True entry give 0, valid False and zero gradients.
    """
    check_scores_and_mask(values, mask, "mask")
    weight = mask.to(values.dtype)
    with torch.no_grad():
        top = (values + (weight - 1) * torch.finfo(values.dtype).max).amax(-1, keepdim=True)
    floor = exponent_floor(values.dtype)
    shifted = torch.where(mask, values - top, floor).clamp(min=floor)
    total = (shifted.exp() * weight).sum(-1)
    valid = total > 0
    result = top.squeeze(-1) + torch.where(valid, total, 1.0).log()
    return torch.where(valid, result, 0.0), valid


def soft_hardest_similarity(scores: Tensor, candidates: Tensor, gamma: float) -> tuple[Tensor, Tensor]:
    """(1/γ) log Σ_j exp(γ s(q, j)) over the candidates (BCLS eq. 15); tends to max_j s(q, j) as γ → ∞.

    ``masked_logsumexp`` of γ·scores, divided by γ (see there).
    """
    check_scores_and_mask(scores, candidates)
    value, valid = masked_logsumexp(gamma * scores, candidates)
    return value / gamma, valid
