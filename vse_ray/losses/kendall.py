"""Kendall ranking loss terms (BCLS eq. 17) and their sliding-window hard-sample form (eq. 19)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.autograd.function import FunctionCtx, once_differentiable

from vse_ray.jit import njit
from vse_ray.losses.samplers import SlidingWindowSampler
from vse_ray.losses.sorting import host_rows


def kendall_pair_terms(sims: Tensor, relevance: Tensor, alpha: float) -> Tensor:
    """Terms 1(r_qj > r_qk + α) [s_qk - s_qj]_+ of BCLS eq. 17, shape (..., Q, C, C) indexed [q, j, k].

    Memory is O(Q C²) per leading index: meant for small batches and as the reference of eq. 19.
    """
    discordant_allowed = relevance.unsqueeze(-1) > relevance.unsqueeze(-2) + alpha
    return (sims.unsqueeze(-2) - sims.unsqueeze(-1)).clamp(min=0) * discordant_allowed


def kendall_full(sims: Tensor, relevance: Tensor, alpha: float) -> Tensor:
    """Σ_j Σ_k 1(r_qj > r_qk + α) [s_qk - s_qj]_+ per query (BCLS eq. 17, one direction), shape (..., Q)."""
    return kendall_pair_terms(sims, relevance, alpha).sum((-1, -2))


def kendall_sliding_window(sims: Tensor, relevance: Tensor, sampler: SlidingWindowSampler) -> Tensor:
    """(1/M) Σ_m [s(q, T^_m) - s(q, T~_m)]_+ per query (BCLS eq. 19, one direction), shape (..., Q).

    T~_m is the furthest item of window m's positive set, T^_m the closest of its negative set (eq. 20);
    windows with an empty set contribute 0.
    """
    pairs = sampler.pairs(sims, relevance)
    return _WindowHinges.apply(sims, pairs.index, pairs.valid).sum(-1) / sampler.n_windows


class _WindowHinges(torch.autograd.Function):
    """[s(q, T^_m) - s(q, T~_m)]_+ of every window m, (..., Q, M), from the (..., Q, 2M) picks of
    ``SlidingWindowSampler.pairs``; 0 where the window is not valid. Compiled forward and backward."""

    @staticmethod
    def forward(ctx: FunctionCtx, sims: Tensor, index: Tensor, valid: Tensor) -> Tensor:
        ctx.save_for_backward(sims, index, valid)
        hinges = _pair_hinges(host_rows(sims, widen=True), host_rows(index), host_rows(valid))
        return torch.from_numpy(hinges).to(sims.device, sims.dtype).view(*index.shape[:-1], -1)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None, None]:
        sims, index, valid = ctx.saved_tensors
        rows = host_rows(sims, widen=True)
        out = np.zeros_like(rows)
        _add_pair_hinge_grads(out, host_rows(grad, widen=True), rows, host_rows(index), host_rows(valid))
        return torch.from_numpy(out).to(sims.device, sims.dtype).view(sims.shape), None, None


@njit
def _pair_hinges(sims: np.ndarray, index: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """``pair_hinges_row`` of every row, (N, M)."""
    out = np.empty((index.shape[0], index.shape[1] // 2), dtype=sims.dtype)
    for q in range(index.shape[0]):
        pair_hinges_row(sims[q], index[q], valid[q], out[q])
    return out


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
def _add_pair_hinge_grads(
    out: np.ndarray, grad: np.ndarray, sims: np.ndarray, index: np.ndarray, valid: np.ndarray
) -> None:
    """``add_pair_hinge_grads_row`` of every row."""
    for q in range(index.shape[0]):
        add_pair_hinge_grads_row(out[q], grad[q], sims[q], index[q], valid[q])


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
