"""BCLS: Triplet-SN on binary labels plus a Kendall ranking loss on continuous pseudo labels."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.autograd.function import FunctionCtx, once_differentiable

from vse_ray.jit import njit
from vse_ray.losses.base import BaseVSELoss, check_non_negative
from vse_ray.losses.hinge import positive_sims
from vse_ray.losses.kendall import add_pair_hinge_grads_row, kendall_full, pair_hinges_row
from vse_ray.losses.samplers import SlidingWindowSampler, soft_hardest_similarity
from vse_ray.losses.samplers.log_sum_exp import add_weighted_row, exponent_floor, shifted_exponents_row
from vse_ray.losses.samplers.sliding_window import EDGE_TOLERANCE, window_row
from vse_ray.losses.sorting import host_rows

KENDALL_FORMS = ("sw_hs", "full", "none")
NEGATIVE_BELOW = 1.0 - EDGE_TOLERANCE  # Triplet-SN's negatives: candidates whose relevance is below 1


class BCLSLoss(BaseVSELoss):
    """Binary and Continuous Label Supervision: L_T-SN (eq. 14-15) + L_K (eq. 19, or eq. 17).

    Triplet-SN per query: [(1/γ) log Σ_{j: r_qj < 1} exp(γ s_qj) - s_qq + m]_+ over in-batch negatives.
    Kendall: with ``kendall="sw_hs"`` the sliding-window hard-sample form (eq. 18-20, window α, stride β,
    M = (2 - α)/β windows; see SlidingWindowSampler); with ``kendall="full"`` the O(B³) sum of eq. 17
    (all j, k of the batch, the positive included); ``kendall="none"`` drops L_K (Triplet-SN only, the
    ablation of the study protocol). The positive pair's relevance is set to 1, the paper's
    normalisation of the S-BERT pseudo labels r in [-1, 1]. The "sw_hs" form is one autograd node whose
    forward and backward run as compiled loops over the queries.

    Args:
        margin: m of eq. 14 (default 0.2).
        gamma: γ of eq. 15 (default 50).
        alpha: relaxation α of eq. 17, in (0, 2) (default 0.2).
        beta: sliding-window stride β (default 0.1).
        kendall: "sw_hs" | "full" | "none".
        reduction: see BaseVSELoss.
        relevance_source: see BaseVSELoss (default 'sbert').
    """

    relevance_source = "sbert"

    def __init__(
        self,
        margin: float = 0.2,
        gamma: float = 50.0,
        alpha: float = 0.2,
        beta: float = 0.1,
        kendall: str = "sw_hs",
        reduction: str = "sum",
        relevance_source: str | None = None,
    ) -> None:
        super().__init__(reduction, relevance_source)
        check_non_negative(margin=margin)
        if gamma <= 0:
            raise ValueError(f"gamma must be > 0, got {gamma}")
        if kendall not in KENDALL_FORMS:
            raise ValueError(f"kendall must be one of {KENDALL_FORMS}, got {kendall!r}")
        self.sampler = SlidingWindowSampler(alpha, beta)
        self.margin, self.gamma, self.alpha, self.beta, self.kendall = margin, gamma, alpha, beta, kendall

    def query_loss(self, sims: Tensor, relevance: Tensor | None, candidates: Tensor) -> Tensor:
        relevance = relevance.clone()
        relevance.diagonal(dim1=-2, dim2=-1).fill_(1.0)
        if self.kendall == "sw_hs":
            return _SlidingWindowBCLS.apply(
                sims, relevance, candidates, self.sampler, self.gamma, self.margin
            )
        soft_max, valid = soft_hardest_similarity(sims, candidates & (relevance < NEGATIVE_BELOW), self.gamma)
        triplet = triplet_sn(soft_max, positive_sims(sims), valid, self.margin)
        return triplet if self.kendall == "none" else triplet + kendall_full(sims, relevance, self.alpha)


def triplet_sn(soft_max: Tensor, positive: Tensor, valid: Tensor, margin: float) -> Tensor:
    """[soft_max - s(q, q) + m]_+ per query (BCLS eq. 14), 0 where the query has no negative."""
    return (soft_max - positive + margin).clamp(min=0) * valid


class _SlidingWindowBCLS(torch.autograd.Function):
    """Per-query L_T-SN + L_K of sims (..., Q, Q) (eq. 14-15 + eq. 19), with a hand-written gradient.

    Compiled row loops do all but the exponentials, sums and logarithms, which torch takes, with the float
    operations of ``triplet_sn(soft_hardest_similarity(...)) + kendall_sliding_window(...)``, so the loss
    is bitwise theirs. The backward is one compiled loop: the softmax weights of the active triplets, minus
    their gradient at the positive, and ±grad/M at the pair of each active window.
    """

    @staticmethod
    def forward(
        ctx: FunctionCtx,
        sims: Tensor,
        relevance: Tensor,
        candidates: Tensor,
        sampler: SlidingWindowSampler,
        gamma: float,
        margin: float,
    ) -> Tensor:
        rows, relevance_rows = host_rows(sims, widen=True), host_rows(relevance, widen=True)
        dtype = rows.dtype.type
        top, exponents, above, positive, index, valid, hinges = _forward_rows(
            rows,
            host_rows(candidates),
            relevance_rows,
            relevance_rows.dtype.type(NEGATIVE_BELOW),
            *sampler.bounds(relevance),
            dtype(gamma),
            exponent_floor(sims.dtype, rows),
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
        return torch.from_numpy(grads).to(sims.device, sims.dtype).view(sims.shape), *(None,) * 5


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
