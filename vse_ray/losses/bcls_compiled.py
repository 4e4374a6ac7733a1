"""BCLS sliding-window loss (eq. 14-15 + eq. 19) as one autograd node whose forward and backward run as
compiled loops over the query rows: the CPU path of ``BCLSLoss(kendall="sw_hs")``."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from vse_ray.compiled_kernels import njit
from vse_ray.losses.kernels.sorting import host_rows
from vse_ray.losses.samplers import SlidingWindowSampler
from vse_ray.losses.samplers.log_sum_exp import exponent_floor
from vse_ray.losses.samplers.sliding_window import window_row


class CompiledSlidingWindowBCLS(torch.autograd.Function):
    """Per-query L_T-SN + L_K of sims (..., Q, Q) (eq. 14-15 + eq. 19), with a hand-written gradient.

    Compiled row loops do all but the exponentials, sums and logarithms, which torch takes, with the float
    operations of the torch path ``triplet_sn(soft_hardest_similarity(...)) + kendall_sliding_window(...)``
    (``BCLSLoss`` on other devices). The backward is one compiled loop: the softmax weights of the active
    triplets, minus their gradient at the positive, and ±grad/M at the pair of each active window.
    ``negative_below``: Triplet-SN's negatives are the candidates whose relevance is below it.
    """

    @staticmethod
    def forward(
        ctx: Any,  # torch keeps what forward stores on it for backward
        sims: Tensor,
        relevance: Tensor,
        candidates: Tensor,
        sampler: SlidingWindowSampler,
        gamma: float,
        margin: float,
        negative_below: float,
    ) -> Tensor:
        rows, relevance_rows = host_rows(sims, widen=True), host_rows(relevance, widen=True)
        dtype = rows.dtype.type
        top, exponents, above, positive, index, valid, hinges = _forward_rows(
            rows,
            host_rows(candidates),
            relevance_rows,
            relevance_rows.dtype.type(negative_below),
            *sampler.bounds(relevance),
            dtype(gamma),
            dtype(exponent_floor(sims.dtype)),
            sims.shape[-2],
        )
        exps = torch.from_numpy(exponents).exp_()
        total = exps.sum(-1)
        per_query, active = _combine_rows(
            top,
            total.log().numpy(),
            total.numpy(),
            positive,
            torch.from_numpy(hinges).sum(-1).numpy(),
            dtype(gamma),
            dtype(margin),
            dtype(sampler.n_windows),
        )
        ctx.save_for_backward(sims)
        ctx.saved = (exps.numpy(), total.numpy(), above, index, valid, active, gamma)
        return torch.from_numpy(per_query).to(sims.device, sims.dtype).view(sims.shape[:-1])

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
        (sims,) = ctx.saved_tensors
        exps, total, above, index, valid, active, gamma = ctx.saved
        rows = host_rows(sims, widen=True)
        grads = _backward_rows(
            host_rows(grad.reshape(-1), widen=True)[0],
            rows,
            exps,
            total,
            above,
            index,
            valid,
            active,
            rows.dtype.type(gamma),
            sims.shape[-2],
        )
        return torch.from_numpy(grads).to(sims.device, sims.dtype).view(sims.shape), *(None,) * 6


@njit
def _forward_rows(
    sims: np.ndarray,
    candidates: np.ndarray,
    relevance: np.ndarray,
    negative_below: float,
    order: np.ndarray,
    counts: np.ndarray,
    row_of: np.ndarray,
    gamma: float,
    floor: float,
    n_queries: int,
) -> tuple[np.ndarray, ...]:
    """Per query row n (its positive is column n % Q): the soft maximum's shifted exponents over the
    negatives (candidates with relevance below ``negative_below``, eq. 15), the positive s(q, q), the window
    picks (eq. 20; sampler bounds row row_of[n]) and their hinges (eq. 19's terms)."""
    n_rows, n_cols = sims.shape
    n_windows = counts.shape[1] // 2
    top = np.empty(n_rows, dtype=sims.dtype)
    positive = np.empty(n_rows, dtype=sims.dtype)
    exponents = np.empty_like(sims)
    above = np.empty(sims.shape, dtype=np.bool_)
    index = np.empty((n_rows, 2 * n_windows), dtype=np.int64)
    valid = np.empty((n_rows, 2 * n_windows), dtype=np.bool_)
    hinges = np.empty((n_rows, n_windows), dtype=sims.dtype)
    negatives = np.empty(n_cols, dtype=np.bool_)
    scratch = np.empty((2, n_cols), dtype=np.int64)
    for q in range(n_rows):
        s = sims[q]
        positive[q] = s[q % n_queries]
        for c in range(n_cols):
            negatives[c] = candidates[q, c] & (relevance[q, c] < negative_below)
        top[q] = shifted_exponents_row(s, negatives, gamma, floor, exponents[q], above[q])
        k = row_of[q]
        window_row(s, order[k], counts[k], index[q], valid[q], scratch, True)
        pair_hinges_row(s, index[q], valid[q], hinges[q])
    return top, exponents, above, positive, index, valid, hinges


@njit
def _combine_rows(
    top: np.ndarray,
    log_total: np.ndarray,
    total: np.ndarray,
    positive: np.ndarray,
    hinge_sum: np.ndarray,
    gamma: float,
    margin: float,
    n_windows: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Per query: triplet_sn((m + log Σ) / γ, s(q, q), Σ > 0, margin) + Σ_m hinge_m / M, with the float
    operations of the torch expressions, and whether the triplet is active (its gradient flows)."""
    out = np.empty_like(top)
    active = np.empty(top.shape, dtype=np.bool_)
    zero, one = top.dtype.type(0.0), top.dtype.type(1.0)  # float32 stays float32
    for q in range(top.shape[0]):
        valid = total[q] > 0
        soft = (top[q] + log_total[q] if valid else zero) / gamma
        gap = soft - positive[q] + margin
        triplet = (gap if not gap < 0 else zero) * (one if valid else zero)
        out[q] = triplet + hinge_sum[q] / n_windows
        active[q] = triplet > 0
    return out, active


@njit
def _backward_rows(
    grad: np.ndarray,
    sims: np.ndarray,
    exps: np.ndarray,
    total: np.ndarray,
    above: np.ndarray,
    index: np.ndarray,
    valid: np.ndarray,
    active: np.ndarray,
    gamma: float,
    n_queries: int,
) -> np.ndarray:
    """d(Σ_q grad_q · loss_q) / d sims, (N, C); row n's positive is column n % Q."""
    out = np.zeros_like(sims)
    n_windows = index.shape[1] // 2
    window_grad = np.empty(n_windows, dtype=sims.dtype)
    zero, one, windows = sims.dtype.type(0.0), sims.dtype.type(1.0), sims.dtype.type(n_windows)
    for q in range(sims.shape[0]):
        triplet_grad = grad[q] if active[q] else zero
        scale = (triplet_grad / gamma if total[q] > 0 else zero) / (total[q] if total[q] > 0 else one)
        add_weighted_row(out[q], scale, exps[q], above[q], gamma)
        out[q, q % n_queries] -= triplet_grad
        window_grad[:] = grad[q] / windows
        add_pair_hinge_grads_row(out[q], window_grad, sims[q], index[q], valid[q])
    return out


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
def add_weighted_row(
    out: np.ndarray, scale: float, exps: np.ndarray, above: np.ndarray, gamma: float
) -> None:
    """out_c += (scale · exps_c) · γ where ``above``: one row's soft-maximum gradient, with scale =
    (grad / γ) / Σ_j exps_j."""
    for c in range(exps.shape[0]):
        if above[c]:
            out[c] += scale * exps[c] * gamma


@njit
def pair_hinges_row(s: np.ndarray, index: np.ndarray, valid: np.ndarray, out: np.ndarray) -> None:
    """out_m = [s[closest_m] - s[furthest_m]]_+ · valid_m for one row; index holds the M furthest, then the
    M closest."""
    n_windows = out.shape[0]
    zero, one = s.dtype.type(0.0), s.dtype.type(1.0)
    for m in range(n_windows):
        gap = s[index[n_windows + m]] - s[index[m]]
        hinge = gap if not gap < 0 else zero  # NaN stays NaN, as in clamp(min=0)
        out[m] = hinge * (one if valid[m] else zero)


@njit
def add_pair_hinge_grads_row(
    out: np.ndarray, grad: np.ndarray, s: np.ndarray, index: np.ndarray, valid: np.ndarray
) -> None:
    """out[closest_m] += grad_m, out[furthest_m] -= grad_m for every valid window m with a positive gap."""
    n_windows = grad.shape[0]
    for m in range(n_windows):
        closest, furthest = index[n_windows + m], index[m]
        if valid[m] and s[closest] - s[furthest] > 0:
            out[closest] += grad[m]
            out[furthest] -= grad[m]
