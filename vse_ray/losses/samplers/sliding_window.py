"""Sliding-window sampling with hard-sample mining over relevance (BCLS SW-HS, eq. 18-20)."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from vse_ray.compiled_kernels import njit
from vse_ray.losses.kernels.backend import use_compiled
from vse_ray.losses.kernels.distinct_rows import distinct_rows
from vse_ray.losses.kernels.sorting import COLUMN_BITS, host_rows, sorted_keys, threshold_keys
from vse_ray.losses.samplers.base import Selection, check_selection

EDGE_TOLERANCE = 1e-6


class SlidingWindowSampler:
    """Windows of width α slide with stride β over relevance in [-1, 1] (BCLS Fig. 3, eq. 18-20).

    Window m (m = 1..M, M = round((2 - α) / β)) spans [a_m, a_m + α] with a_m = -1 + m β. Its negative set is
    {k: r_qk < a_m} and its positive set {j: r_qj >= a_m + α}, so every (positive, negative) pair satisfies
    r_qj > r_qk + α as eq. 17 requires; window m = 0 would have an empty negative set and is left out, which
    gives the paper's M = (2 - α) / β windows. The positive set of the top window holds the positive pair
    (r = 1). Edges are compared with a 1e-6 tolerance so that float rounding of a_m and of r = 1 does not
    move items across them. Hard-sample mining (eq. 20) picks per window the furthest positive
    (argmin similarity) and the closest negative (argmax similarity). Sorting each row by relevance
    (``sorted_keys``) turns both into prefix-max / suffix-min lookups, which one compiled loop per row
    takes, with torch.cummax / cummin's tie rules: O(C log C + M) per query and no (M, C) masks. Rows of
    equal relevance (both directions of a symmetric relevance) share their sort and window bounds
    (``distinct_rows``). Tensors off the CPU take the same steps as torch operations on their device
    (``torch.sort``, ``searchsorted``, ``cummax`` / ``cummin``; see ``vse_ray.losses.kernels.backend``);
    both give the same picks, up to the order of equal relevances, which moves only picks among tied
    scores.

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
        self._edge_cache: dict[torch.dtype, tuple[np.ndarray, np.ndarray | None]] = {}

    def lower_edges(self, dtype: torch.dtype, device: torch.device) -> Tensor:
        """a_m for m = 1..M, shape (M,)."""
        return -1.0 + self.beta * torch.arange(1, self.n_windows + 1, dtype=dtype, device=device)

    def _edges(self, dtype: torch.dtype) -> tuple[np.ndarray, np.ndarray | None]:
        """(thresholds, keys): the host array (2M,) of a_m - tol (negatives: r below) then a_m + α - tol
        (positives: r at or above), computed in the relevance's ``dtype``, and for float32 their sort keys;
        once per dtype."""
        if dtype not in self._edge_cache:
            lo = self.lower_edges(dtype, torch.device("cpu"))
            edges = torch.cat((lo - EDGE_TOLERANCE, lo + self.alpha - EDGE_TOLERANCE))
            thresholds = host_rows(edges, widen=True)[0]
            keys = threshold_keys(thresholds) if thresholds.dtype == np.float32 else None
            self._edge_cache[dtype] = thresholds, keys
        return self._edge_cache[dtype]

    def bounds(self, relevance: Tensor) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Host (order, counts, row_of) of the relevance (..., Q, C), computed once per distinct row (K of
        them): ``order`` (K, C) sorts the rows (equal float32 values in column order); ``counts`` (K, 2M)
        holds per window the number of negatives (r < a_m - tol), then the sorted position of the first
        positive (the number of r < a_m + α - tol); ``row_of`` (N,) gives each relevance row its K row."""
        rows = host_rows(relevance, widen=True)
        first, row_of = distinct_rows(rows)
        rows = rows[first]
        thresholds, keys = self._edges(relevance.dtype)
        if keys is not None:
            ascending = sorted_keys(rows)
            return ascending & COLUMN_BITS, _counts_below(ascending, keys), row_of
        order = np.argsort(rows, axis=-1)
        return order, _counts_below(np.take_along_axis(rows, order, -1), thresholds), row_of

    def __call__(self, scores: Tensor, relevance: Tensor) -> tuple[Selection, Selection]:
        """(positive, negative) selections, each (..., Q, M), for scores and relevance (..., Q, C)."""
        pairs = self.pairs(scores, relevance)
        furthest, closest = pairs.columns.split(self.n_windows, -1)
        valid = pairs.valid[..., : self.n_windows]
        return Selection(furthest, valid), Selection(closest, valid)

    def pairs(self, scores: Tensor, relevance: Tensor) -> Selection:
        """Both picks of every window as one (..., Q, 2M) Selection: the M furthest positives, then the M
        closest negatives; ``valid`` repeats the M window flags."""
        if not scores.is_floating_point() or scores.dim() < 2:
            raise ValueError(
                f"scores must be a floating tensor of shape (..., Q, C), got {tuple(scores.shape)}"
            )
        if relevance.shape != scores.shape or not relevance.is_floating_point():
            raise ValueError(
                f"relevance must be a floating tensor of shape {tuple(scores.shape)}, got "
                f"{relevance.dtype} {tuple(relevance.shape)}"
            )
        if not use_compiled(scores):
            return check_selection(self._torch_pairs(scores.detach(), relevance), scores.shape[:-1])
        bounds = self.bounds(relevance)
        index, valid = _window_picks(host_rows(scores, widen=True), *bounds)
        shape = (*scores.shape[:-1], 2 * self.n_windows)
        pairs = Selection(torch.from_numpy(index).view(shape), torch.from_numpy(valid).view(shape))
        return check_selection(Selection(*(t.to(scores.device) for t in pairs)), scores.shape[:-1])

    def _torch_pairs(self, scores: Tensor, relevance: Tensor) -> Selection:
        """``pairs`` with torch operations on the tensors' device: a stable sort by relevance (equal values
        in column order), window bounds by ``searchsorted``, the closest negative as the running argmax of
        the sorted similarities and the furthest positive as the running argmin from the end."""
        n_cols, n_windows = scores.shape[-1], self.n_windows
        order = relevance.sort(dim=-1, stable=True).indices
        sims_sorted = scores.gather(-1, order)
        lo = self.lower_edges(relevance.dtype, relevance.device)
        edges = torch.cat((lo - EDGE_TOLERANCE, lo + self.alpha - EDGE_TOLERANCE))
        edges = edges.expand(*relevance.shape[:-1], 2 * n_windows).contiguous()
        n_neg, first_pos = torch.searchsorted(relevance.gather(-1, order), edges).split(n_windows, -1)
        closest = sims_sorted.cummax(-1).indices.gather(-1, (n_neg - 1).clamp(min=0))
        suffix_min = sims_sorted.flip(-1).cummin(-1).indices
        furthest = n_cols - 1 - suffix_min.gather(-1, (n_cols - 1 - first_pos).clamp(min=0))
        valid = (n_neg > 0) & (first_pos < n_cols)
        index = order.gather(-1, torch.cat((furthest, closest), -1))
        return Selection(index, torch.cat((valid, valid), -1))


@njit
def _counts_below(ascending: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """(K, T): per ascending row, the number of entries below each threshold, as torch.searchsorted. The T
    binary searches of a row run in lockstep: their steps depend only on the row length, and each
    comparison feeds a select."""
    n_rows, n_cols = ascending.shape
    counts = np.zeros((n_rows, thresholds.shape[0]), dtype=np.int64)
    if n_cols == 0:
        return counts
    for k in range(n_rows):
        row, base = ascending[k], counts[k]
        n = n_cols
        while n > 1:
            half = n >> 1
            for t in range(thresholds.shape[0]):
                base[t] += half if row[base[t] + half] < thresholds[t] else 0
            n -= half
        for t in range(thresholds.shape[0]):
            base[t] += 1 if row[base[t]] < thresholds[t] else 0
    return counts


@njit
def _window_picks(
    scores: np.ndarray, order: np.ndarray, counts: np.ndarray, row_of: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(index, valid), each (N, 2M), of every row by ``window_row``; row n uses bounds row row_of[n]."""
    n_rows, n_cols = scores.shape
    n_windows = counts.shape[1] // 2
    index = np.empty((n_rows, 2 * n_windows), dtype=np.int64)
    valid = np.empty((n_rows, 2 * n_windows), dtype=np.bool_)
    scratch = np.empty((2, n_cols), dtype=np.int64)
    for q in range(n_rows):
        k = row_of[q]
        window_row(scores[q], order[k], counts[k], index[q], valid[q], scratch)
    return index, valid


@njit
def window_row(
    s: np.ndarray,
    o: np.ndarray,
    counts: np.ndarray,
    index: np.ndarray,
    valid: np.ndarray,
    scratch: np.ndarray,
    valid_only: bool = False,
) -> None:
    """The picks of one query: index (2M,) gets the furthest positive of window m at m and the closest
    negative at M + m, valid (2M,) the window flags twice; scratch is a (2, C) int64 work array.

    ``o`` sorts the row by relevance; window m's negatives are the first counts[m] items of that order, its
    positives those from counts[M + m] on. The closest negative is the running argmax of the similarities up
    to counts[m] - 1, the furthest positive the running argmin from counts[M + m] on, with torch.cummax /
    cummin's tie rules (ties and NaN to the later, resp. earlier, sorted position). An empty set gives the
    first, resp. last, sorted item and valid False. With ``valid_only`` the picks of windows that are not
    valid are some item of the row (the suffix scan then starts at the first valid window).
    """
    n_cols, n_windows = s.shape[0], counts.shape[0] // 2
    closest_at, furthest_at = scratch[0], scratch[1]  # sorted positions of the running argmax / argmin
    last = max(counts[n_windows - 1] - 1, 0)  # the prefix scan serves every window up to here
    first = counts[n_windows]  # and the suffix scan from here (both counts grow with m)
    if valid_only:
        first = n_cols
        for m in range(n_windows):
            if counts[m] > 0 and counts[n_windows + m] < n_cols:
                first = counts[n_windows + m]
                break
    first = min(first, n_cols - 1)
    best, top = 0, s[o[0]]
    for p in range(last + 1):
        x = s[o[p]]
        replace = not x < top  # x >= top, or x is NaN
        if top != top:  # a NaN maximum stays until the next NaN
            replace = x != x
        best, top = (p, x) if replace else (best, top)
        closest_at[p] = best
    best, low = n_cols - 1, s[o[n_cols - 1]]
    for p in range(n_cols - 1, first - 1, -1):
        x = s[o[p]]
        replace = not x > low
        if low != low:
            replace = x != x
        best, low = (p, x) if replace else (best, low)
        furthest_at[p] = best
    for m in range(n_windows):
        n_neg, first_pos = counts[m], counts[n_windows + m]
        index[m] = o[furthest_at[min(max(first_pos, first), n_cols - 1)]]
        index[n_windows + m] = o[closest_at[max(n_neg - 1, 0)]]
        valid[m] = valid[n_windows + m] = (n_neg > 0) & (first_pos < n_cols)
