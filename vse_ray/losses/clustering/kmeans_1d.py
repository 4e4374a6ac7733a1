"""Batched Lloyd K-Means on sorted 1-D rows: clusters are contiguous intervals of each sorted row."""

from __future__ import annotations

import torch
from torch import Tensor


def prefix_sums(xs: Tensor, counts: Tensor) -> Tensor:
    """(R, n + 1) running sums of each sorted row's first ``counts[r]`` values (padding counts as 0)."""
    valid = torch.arange(xs.shape[-1], device=xs.device) < counts.unsqueeze(-1)
    return torch.nn.functional.pad(xs.masked_fill(~valid, 0.0).cumsum(-1), (1, 0))


def kmeans_1d_sorted(xs: Tensor, counts: Tensor, n_clusters: Tensor, max_iter: int = 100) -> Tensor:
    """Lloyd's algorithm for k-means, run on many 1-D rows at once.

    Sorted 1-D data and sorted centres make every cluster an interval between the midpoints of adjacent
    centres, so an assignment step is one ``searchsorted`` and an update step two prefix-sum lookups:
    O(k log n) per row and iteration. Centres start at the (t + 1/2)/k quantiles of each row (t = 0..k-1)
    and iterations stop when no row's assignment changes. Ties between two centres go to the lower one, as
    in scikit-learn (first minimum). An emptied cluster keeps its centre (scikit-learn would move it to a
    far point instead); this only happens on rare inputs.

    Args:
        xs: (R, n) ascending rows; entries at positions >= counts[r] are padding (+inf recommended).
        counts: (R,) int64 number of real values per row.
        n_clusters: (R,) int64 k per row, 1 <= k; rows with k > counts[r] get meaningless output.
        max_iter: iteration cap.

    Returns:
        (R, k_max) int64 exclusive end position of each cluster, clusters ordered by increasing centre;
        clusters t >= k are empty and end at counts[r].
    """
    k_max = int(n_clusters.max())
    ts = torch.arange(k_max, device=xs.device)
    prefix = prefix_sums(xs, counts)
    last = counts.unsqueeze(-1)
    init_pos = (
        ((ts + 0.5) * counts.unsqueeze(-1) / n_clusters.unsqueeze(-1)).long().clamp(max=xs.shape[-1] - 1)
    )
    centres = xs.gather(-1, init_pos).masked_fill(ts >= n_clusters.unsqueeze(-1), float("inf"))
    ends = last.expand(-1, k_max)
    for _ in range(max_iter):
        midpoints = (centres[:, :-1] + centres[:, 1:]) / 2
        inner = torch.searchsorted(xs, midpoints.contiguous(), right=True).minimum(last)
        new_ends = torch.cat((inner, last), -1)
        if torch.equal(new_ends, ends):
            break
        ends = new_ends
        starts = torch.nn.functional.pad(ends[:, :-1], (1, 0))
        sizes = ends - starts
        sums = prefix.gather(-1, ends) - prefix.gather(-1, starts)
        centres = torch.where(sizes > 0, sums / sizes.clamp(min=1), centres)
    return ends
