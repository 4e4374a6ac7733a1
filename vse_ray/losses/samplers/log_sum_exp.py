"""Soft hardest negative: a masked log-sum-exp (smooth maximum) of the candidates' similarities."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.autograd.function import FunctionCtx, once_differentiable

from vse_ray.jit import njit
from vse_ray.losses.samplers.base import check_scores_and_mask
from vse_ray.losses.sorting import host_rows


def masked_logsumexp(values: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """log Σ_{j: mask} exp(values_j) over the last dim, with finite gradients on empty rows.

    Computed as m + log Σ_{j: mask} exp(values_j - m) with m the masked maximum, so no exponential of a
    huge negative fill value is taken (slow on CPU). Exponents are floored at log(finfo.tiny) / 2 (about
    -44 in float32), so neither the exponentials nor their gradients are subnormal numbers (very slow on
    CPU); this changes the sum, which is at least 1, by less than C·sqrt(finfo.tiny), far below float
    rounding. The gradient is grad · exp(values_j - m) / Σ, the softmax weights of the candidates (0 for
    floored entries: the floor's slope is 0).

    Returns:
        (result (...,), valid (...,)); rows with no True entry give 0, valid False and zero gradients.
    """
    check_scores_and_mask(values, mask, "mask")
    return _SoftMaximum.apply(values, mask, 1.0)


def soft_hardest_similarity(scores: Tensor, candidates: Tensor, gamma: float) -> tuple[Tensor, Tensor]:
    """(1/γ) log Σ_j exp(γ s(q, j)) over the candidates (BCLS eq. 15); tends to max_j s(q, j) as γ → ∞.

    ``masked_logsumexp`` of γ·scores, divided by γ (see there).
    """
    check_scores_and_mask(scores, candidates)
    return _SoftMaximum.apply(scores, candidates, gamma)


class _SoftMaximum(torch.autograd.Function):
    """(1/γ) masked log-sum-exp of γ·values per row, with its gradient from one compiled loop.

    A compiled loop scales, takes the masked maximum, shifts, floors and fills; torch takes the
    exponentials, sums and logarithms. Values and gradients are bitwise those of the same steps written as
    torch expressions with autograd (same float operations in the same order).
    """

    @staticmethod
    def forward(ctx: FunctionCtx, values: Tensor, mask: Tensor, gamma: float) -> tuple[Tensor, Tensor]:
        rows = host_rows(values, widen=True)
        dtype = rows.dtype.type
        floor = exponent_floor(values.dtype, rows)
        top, exponents, above = _shifted_exponents(rows, host_rows(mask), dtype(gamma), floor)
        exps = torch.from_numpy(exponents).exp_()
        total = exps.sum(-1)
        valid = total > 0
        result = (torch.from_numpy(top) + total.log()).where(valid, 0.0) / gamma
        ctx.saved = (exps.numpy(), total, valid, above, gamma)
        ctx.shape = values.shape
        lead, device = values.shape[:-1], values.device
        valid = valid.to(device).view(lead)
        ctx.mark_non_differentiable(valid)
        return result.to(device, values.dtype).view(lead), valid

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: Tensor, _: Tensor) -> tuple[Tensor, None, None]:
        exps, total, valid, above, gamma = ctx.saved
        scale = (grad.reshape(-1).to("cpu", total.dtype) / gamma).where(valid, 0.0) / total.where(valid, 1.0)
        out = np.zeros_like(exps)
        _add_weighted(out, scale.numpy(), exps, above, exps.dtype.type(gamma))
        return torch.from_numpy(out).to(grad.device, grad.dtype).view(ctx.shape), None, None


def exponent_floor(dtype: torch.dtype, rows: np.ndarray) -> np.floating:
    """log(finfo(dtype).tiny) / 2, the smallest exponent taken (no subnormal results), as a scalar of the
    dtype of the host ``rows``."""
    return rows.dtype.type(math.log(torch.finfo(dtype).tiny) / 2)


@njit
def _shifted_exponents(
    values: np.ndarray, mask: np.ndarray, gamma: float, floor: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``shifted_exponents_row`` of every row: (maximum (N,), exponents (N, C), above the floor (N, C))."""
    top = np.empty(values.shape[0], dtype=values.dtype)
    exponents = np.empty_like(values)
    above = np.empty(values.shape, dtype=np.bool_)
    for q in range(values.shape[0]):
        top[q] = shifted_exponents_row(values[q], mask[q], gamma, floor, exponents[q], above[q])
    return top, exponents, above


@njit
def shifted_exponents_row(
    v: np.ndarray, mask: np.ndarray, gamma: float, floor: float, exponents: np.ndarray, above: np.ndarray
) -> float:
    """For one row of γ·v: returns m, the maximum of γ v + (0 on the mask, else -finfo.max) - so the masked
    maximum, -finfo.max on an empty row, NaN if any entry is NaN (as amax propagates it); exponents (C,)
    gets max(γ v - m, floor), -inf off the mask (so that exp gives 0), and above (C,) which candidates'
    exponents lie above the floor. All in the dtype of ``v``."""
    lowered, zero = -np.finfo(v.dtype).max, v.dtype.type(0.0)
    m = lowered
    for c in range(v.shape[0]):
        x = gamma * v[c] + (zero if mask[c] else lowered)
        m = x if (x > m) | (x != x) else m
    for c in range(v.shape[0]):
        gap = gamma * v[c] - m
        gap = gap if not gap < floor else floor
        exponents[c] = gap if mask[c] else -np.inf
        above[c] = mask[c] & (gap > floor)
    return m


@njit
def _add_weighted(
    out: np.ndarray, scale: np.ndarray, exps: np.ndarray, above: np.ndarray, gamma: float
) -> None:
    """``add_weighted_row`` of every row."""
    for q in range(exps.shape[0]):
        add_weighted_row(out[q], scale[q], exps[q], above[q], gamma)


@njit
def add_weighted_row(
    out: np.ndarray, scale: float, exps: np.ndarray, above: np.ndarray, gamma: float
) -> None:
    """out_c += (scale · exps_c) · γ where ``above``: one row's soft-maximum gradient, with scale =
    (grad / γ) / Σ_j exps_j."""
    for c in range(exps.shape[0]):
        if above[c]:
            out[c] += scale * exps[c] * gamma
