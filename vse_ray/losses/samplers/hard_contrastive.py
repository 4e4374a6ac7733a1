"""Hard-contrastive pair: the furthest member of an upper set against the closest member of a lower set."""

from __future__ import annotations

import torch
from torch import Tensor

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
        N_{l:L}. The extremes of each level are taken once - the furthest and the closest member - and the
        closest member of N_{l:L} follows as a running maximum from level L up, so no (L, ..., Q, C) upper
        or lower masks are built.

        Args:
            scores: (..., Q, Q) query-major similarities.
            levels: (..., Q, Q) integer level of each candidate in 1..L (1 = most relevant), 0 elsewhere.
            n_levels: L.

        Returns:
            (upper, lower) Selections with K = L: i* and j* of term l at position l - 1.
        """
        if levels.shape != scores.shape or levels.is_floating_point() or levels.dtype == torch.bool:
            raise ValueError(
                f"levels must be an integer tensor of shape {tuple(scores.shape)}, got {levels.dtype} "
                f"{tuple(levels.shape)}"
            )
        if n_levels < 1:
            raise ValueError(f"n_levels must be >= 1, got {n_levels}")
        with torch.no_grad():
            pair = self._per_level(scores.detach(), levels, n_levels)
        return tuple(check_selection(s, scores.shape[:-1]) for s in pair)  # type: ignore[return-value]

    @staticmethod
    def _per_level(scores: Tensor, levels: Tensor, n_levels: int) -> tuple[Selection, Selection]:
        # one lookup adds 0 / -inf per level: rows 0..L-1 keep level l (lower sets), rows L.. level l (upper)
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
