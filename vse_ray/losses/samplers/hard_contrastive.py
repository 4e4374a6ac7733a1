"""Hard-contrastive pair: the furthest member of an upper set against the closest member of a lower set."""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from vse_ray.compiled_kernels import njit
from vse_ray.losses.kernels.backend import use_compiled
from vse_ray.losses.kernels.sorting import host_rows
from vse_ray.losses.samplers.base import Selection, check_scores_and_mask, check_selection
from vse_ray.losses.samplers.furthest import FurthestSampler
from vse_ray.losses.samplers.hardest import HardestSampler


class HardContrastivePairSampler:
    """Ladder loss hard-contrastive sampling (ladder eq. 8), also BCLS hard-sample mining (eq. 20).

    For each query, ``i* = argmin_{i in upper} s(q, i)`` and ``j* = argmax_{j in lower} s(q, j)``.
    """

    def __call__(self, scores: Tensor, upper: Tensor, lower: Tensor) -> tuple[Selection, Selection]:
        """Return (upper selection, lower selection) for ``scores`` (..., Q, C) and two bool masks alike."""
        check_scores_and_mask(scores, upper, "upper")
        check_scores_and_mask(scores, lower, "lower")
        return FurthestSampler()(scores, upper), HardestSampler()(scores, lower)

    def per_level(self, scores: Tensor, levels: Tensor, n_levels: int) -> tuple[Selection, Selection]:
        """The pairs of all L ladder terms at once, from the level of each candidate (ladder eq. 7-8).

        Term l compares the upper set N_{l-1} (the query's own column q for l = 1) with the lower set
        N_{l:L}. The extremes of every level - the furthest and the closest member - are taken per query
        row, and the closest member of N_{l:L} follows as a running maximum from level L up. On CPU tensors
        a compiled pass over each row does this without any (L, ..., Q, C) intermediate; on other devices
        torch max-reductions over 0 / -inf level penalties do it on the device (see
        ``vse_ray.losses.kernels.backend``). Both give the same picks: ties go to the first column (as torch's
        max / argmax), ties of the running maximum to the lower level; a NaN score is picked first.

        Args:
            scores: (..., Q, Q) query-major similarities.
            levels: (..., Q, Q) integer level of each candidate in 1..L (1 = most relevant), 0 elsewhere.
            n_levels: L.

        Returns:
            (upper, lower) Selections with K = L: i* and j* of term l at position l - 1.

        Raises:
            ValueError: on levels that are no integer tensor like ``scores`` or lie outside 0..L.
        """
        if levels.shape != scores.shape or levels.is_floating_point() or levels.dtype == torch.bool:
            raise ValueError(
                f"levels must be an integer tensor of shape {tuple(scores.shape)}, got {levels.dtype} "
                f"{tuple(levels.shape)}"
            )
        if n_levels < 1:
            raise ValueError(f"n_levels must be >= 1, got {n_levels}")
        pair = _per_level(scores.detach(), levels, n_levels)
        return tuple(check_selection(s, scores.shape[:-1]) for s in pair)  # type: ignore[return-value]


def _per_level(scores: Tensor, levels: Tensor, n_levels: int) -> tuple[Selection, Selection]:
    """``per_level`` on validated inputs: the kernel on (N, C) host rows, results back on scores' device;
    ``torch_per_level`` for tensors that the compiled path does not take."""
    if not use_compiled(scores):
        if bool(((levels < 0) | (levels > n_levels)).any()):
            raise ValueError(f"levels must lie in 0..n_levels = {n_levels}")
        return torch_per_level(scores, levels, n_levels)
    upper_index, upper_valid, lower_index, lower_valid, in_range = level_extremes(
        host_rows(scores, widen=True), host_rows(levels), n_levels, scores.shape[-2]
    )
    if not in_range:
        raise ValueError(f"levels must lie in 0..n_levels = {n_levels}")
    shape, device = (*scores.shape[:-1], n_levels), scores.device
    upper, lower = (
        Selection(*(torch.from_numpy(a).view(shape).to(device) for a in pair))
        for pair in ((upper_index, upper_valid), (lower_index, lower_valid))
    )
    return upper, lower


def torch_per_level(scores: Tensor, levels: Tensor, n_levels: int) -> tuple[Selection, Selection]:
    """The per-level picks with torch operations on the tensors' device: per level l, scores + penalty
    (0 on level l, -inf elsewhere) reduced by max for the closest member and -scores + penalty for the
    furthest, then a running maximum from level L up (``cummax``) for the closest member of N_{l:L}."""
    keep = torch.eye(n_levels + 1, dtype=scores.dtype, device=scores.device)[1:]
    penalty = torch.cat((keep, keep[:-1])).log().index_select(1, levels.reshape(-1))
    penalty = penalty.view(2 * n_levels - 1, *levels.shape)
    closest, closest_at = (scores + penalty[:n_levels]).max(-1)
    neg_furthest, furthest_at = (penalty[n_levels:] - scores).max(-1)
    running = closest.flip(0).cummax(0)
    lower_valid = running.values.flip(0) > float("-inf")
    lower_index = closest_at.gather(0, n_levels - 1 - running.indices.flip(0))
    own = torch.arange(scores.shape[-1], device=scores.device).expand(1, *scores.shape[:-1])
    upper_index = torch.cat((own, furthest_at))
    upper_valid = torch.cat((torch.ones_like(own, dtype=torch.bool), neg_furthest > float("-inf")))
    return (
        Selection(upper_index.movedim(0, -1), upper_valid.movedim(0, -1)),
        Selection(lower_index.movedim(0, -1), lower_valid.movedim(0, -1)),
    )


@njit(inline="always")
def _beats(value: float, best: float) -> bool:
    """Whether ``value`` replaces the running maximum ``best`` as torch's max does: larger, or a first NaN."""
    return (value > best) | ((value != value) & (best == best))


@njit
def level_extremes(
    scores: np.ndarray, levels: np.ndarray, n_levels: int, n_queries: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool]:
    """(upper index, upper valid, lower index, lower valid), each (N, L), and whether all levels are in 0..L.

    Row n is query n % n_queries. Upper pick of term 1: the query's own column; of term l >= 2: the first
    argmin of the scores of level l - 1 (ladder eq. 8's i*). Lower pick of term l: the first argmax of
    level l' >= l with the largest maximum, the lowest such l' on ties (eq. 8's j*; torch's cummax).
    An empty set gives index 0 (the first column) and valid False. A row holding a NaN or infinite score
    is done again with the arithmetic of torch's 0 / -inf level penalties, which spreads NaN across levels.
    """
    n_rows, n_cols = scores.shape
    upper_index = np.empty((n_rows, n_levels), dtype=np.int64)
    lower_index = np.empty((n_rows, n_levels), dtype=np.int64)
    upper_valid = np.empty((n_rows, n_levels), dtype=np.bool_)
    lower_valid = np.empty((n_rows, n_levels), dtype=np.bool_)
    closest, furthest = np.empty(n_levels, dtype=scores.dtype), np.empty(n_levels, dtype=scores.dtype)
    closest_at, furthest_at = np.empty(n_levels, dtype=np.int64), np.empty(n_levels, dtype=np.int64)
    in_range = True
    for n in range(n_rows):
        odd = False  # a level out of range or a NaN / infinite score: the row is then done again, literally
        for literal in (False, True):
            closest[:] = -math.inf
            furthest[:] = -math.inf  # the largest negated score
            closest_at[:] = 0
            furthest_at[:] = 0
            for c in range(n_cols):
                level, s = levels[n, c], scores[n, c]
                if not literal:
                    odd |= (level < 0) | (level > n_levels) | (s - s != 0)
                    if 0 < level <= n_levels:
                        if s > closest[level - 1]:
                            closest[level - 1], closest_at[level - 1] = s, c
                        if -s > furthest[level - 1]:
                            furthest[level - 1], furthest_at[level - 1] = -s, c
                    continue
                if level < 0 or level > n_levels:
                    in_range, level = False, 0
                for t in range(n_levels):  # outside its level, torch's -inf penalty turns s into NaN or -inf
                    near, far = (s, -s) if t == level - 1 else (-math.inf + s, -math.inf - s)
                    if _beats(near, closest[t]):
                        closest[t], closest_at[t] = near, c
                    if _beats(far, furthest[t]):
                        furthest[t], furthest_at[t] = far, c
            if not odd:
                break
        upper_index[n, 0], upper_valid[n, 0] = n % n_queries, True
        for t in range(1, n_levels):
            upper_index[n, t], upper_valid[n, t] = furthest_at[t - 1], furthest[t - 1] > -math.inf
        best, best_at = closest[n_levels - 1], n_levels - 1
        for t in range(n_levels - 1, -1, -1):
            if (closest[t] != closest[t]) | ((best == best) & (closest[t] >= best)):
                best, best_at = closest[t], t
            lower_index[n, t], lower_valid[n, t] = closest_at[best_at], best > -math.inf
    return upper_index, upper_valid, lower_index, lower_valid, in_range
