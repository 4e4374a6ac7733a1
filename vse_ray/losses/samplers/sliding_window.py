"""Sliding-window sampling with hard-sample mining over relevance (BCLS SW-HS, eq. 18-20)."""

from __future__ import annotations

import torch
from torch import Tensor

from vse_ray.losses.samplers.base import Selection, check_selection
from vse_ray.losses.sorting import argsort_rows

EDGE_TOLERANCE = 1e-6


class SlidingWindowSampler:
    """Windows of width α slide with stride β over relevance in [-1, 1] (BCLS Fig. 3, eq. 18-20).

    Window m (m = 1..M, M = round((2 - α) / β)) spans [a_m, a_m + α] with a_m = -1 + m β. Its negative set is
    {k: r_qk < a_m} and its positive set {j: r_qj >= a_m + α}, so every (positive, negative) pair satisfies
    r_qj > r_qk + α as eq. 17 requires; window m = 0 would have an empty negative set and is left out, which
    gives the paper's M = (2 - α) / β windows. The positive set of the top window holds the positive pair
    (r = 1). Edges are compared with a 1e-6 tolerance so that float rounding of a_m and of r = 1 does not
    move items across them. Hard-sample mining (eq. 20) picks per window the furthest positive
    (argmin similarity) and the closest negative (argmax similarity). Sorting each row by relevance turns
    both into prefix-max / suffix-min lookups: O(C log C) per query instead of O(M C).

    Args:
        alpha: window width (the relaxation α of eq. 17), in (0, 2).
        beta: stride β > 0.
    """

    def __init__(self, alpha: float, beta: float) -> None:
        if not 0.0 < alpha < 2.0:
            raise ValueError(f"alpha must lie in (0, 2), got {alpha}")
        if beta <= 0.0:
            raise ValueError(f"beta must be > 0, got {beta}")
        self.alpha, self.beta = alpha, beta
        self.n_windows = max(1, round((2.0 - alpha) / beta))

    def lower_edges(self, dtype: torch.dtype, device: torch.device) -> Tensor:
        """a_m for m = 1..M, shape (M,)."""
        return -1.0 + self.beta * torch.arange(1, self.n_windows + 1, dtype=dtype, device=device)

    def __call__(self, scores: Tensor, relevance: Tensor) -> tuple[Selection, Selection]:
        """(positive, negative) selections, each (..., Q, M), for scores and relevance (..., Q, C)."""
        if not scores.is_floating_point() or scores.dim() < 2:
            raise ValueError(
                f"scores must be a floating tensor of shape (..., Q, C), got {tuple(scores.shape)}"
            )
        if relevance.shape != scores.shape or not relevance.is_floating_point():
            raise ValueError(
                f"relevance must be a floating tensor of shape {tuple(scores.shape)}, got "
                f"{relevance.dtype} {tuple(relevance.shape)}"
            )
        with torch.no_grad():
            pair = self._select(scores.detach(), relevance.detach())
        return tuple(check_selection(s, scores.shape[:-1]) for s in pair)  # type: ignore[return-value]

    def _select(self, scores: Tensor, relevance: Tensor) -> tuple[Selection, Selection]:
        lead, n_cols = scores.shape[:-1], scores.shape[-1]
        flat = relevance.reshape(-1, n_cols)
        order = argsort_rows(flat)
        rel_sorted = flat.gather(-1, order)
        sims_sorted = scores.reshape(-1, n_cols).gather(-1, order)
        lo = (
            self.lower_edges(rel_sorted.dtype, rel_sorted.device).expand(rel_sorted.shape[0], -1).contiguous()
        )
        n_neg = torch.searchsorted(rel_sorted, lo - EDGE_TOLERANCE)
        first_pos = torch.searchsorted(rel_sorted, lo + self.alpha - EDGE_TOLERANCE)
        closest = torch.cummax(sims_sorted, -1).indices.gather(-1, (n_neg - 1).clamp(min=0))
        suffix_min = torch.cummin(sims_sorted.flip(-1), -1).indices
        furthest = n_cols - 1 - suffix_min.gather(-1, (n_cols - 1 - first_pos).clamp(min=0))
        valid = (n_neg > 0) & (first_pos < n_cols)
        shape = (*lead, self.n_windows)
        pos = Selection(order.gather(-1, furthest).view(shape), valid.view(shape))
        neg = Selection(order.gather(-1, closest).view(shape), valid.view(shape))
        return pos, neg
