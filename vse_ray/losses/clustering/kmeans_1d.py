"""Batched Lloyd K-Means on sorted 1-D rows: clusters are contiguous intervals of each sorted row."""

from __future__ import annotations

import torch
from torch import Tensor


def prefix_sums(xs: Tensor, counts: Tensor) -> Tensor:
    """(R, n + 1) running sums of each sorted row's first ``counts[r]`` values (padding counts as 0)."""
    valid = torch.arange(xs.shape[-1], device=xs.device) < counts.unsqueeze(-1)
    return torch.nn.functional.pad(xs.masked_fill(~valid, 0.0).cumsum(-1), (1, 0))


def gather_rows(table: Tensor, index: Tensor) -> Tensor:
    """``table`` (R, m) at ``index`` (R, ...) per row, shape of ``index``."""
    return table.gather(-1, index.reshape(index.shape[0], -1)).view(index.shape)


def kmeans_1d_sorted(xs: Tensor, counts: Tensor, n_clusters: Tensor, max_iter: int = 100) -> Tensor:
    """Lloyd's algorithm for k-means, run on many 1-D rows (and several k per row) at once.

    Sorted 1-D data and sorted centres make every cluster an interval between the midpoints of adjacent
    centres, so an assignment step is one ``searchsorted`` and an update step one prefix-sum lookup:
    O(k log n) per row and iteration. Centres start at the (t + 1/2)/k quantiles of each row (t = 0..k-1)
    and iterations stop when no row's assignment changes. Ties between two centres go to the lower one, as
    in scikit-learn (first minimum). An emptied cluster keeps its centre (scikit-learn would move it to a
    far point instead); this only happens on rare inputs.

    Args:
        xs: (R, n) ascending rows; entries at positions >= counts[r] are padding (+inf recommended).
        counts: (R,) int64 number of real values per row.
        n_clusters: (R,) or (R, G) int64 k per row (G clusterings of each row), 1 <= k; rows with
            k > counts[r] get meaningless output.
        max_iter: iteration cap.

    Returns:
        (R, k_max) - or (R, G, k_max) - int64 exclusive end position of each cluster, clusters ordered by
        increasing centre; clusters t >= k are empty and end at counts[r].
    """
    ks = n_clusters.view(n_clusters.shape[0], -1, 1)
    k_max = int(ks.max())
    ts = torch.arange(k_max, device=xs.device)
    prefix = prefix_sums(xs, counts)
    last = counts.view(-1, 1, 1)
    init_pos = ((ts + 0.5) * last / ks).long().clamp(max=xs.shape[-1] - 1)
    centres = gather_rows(xs, init_pos).masked_fill(ts >= ks, float("inf"))
    bounds = torch.zeros((*centres.shape[:-1], k_max + 1), dtype=torch.long, device=xs.device)
    bounds[..., 1:] = last
    for _ in range(max_iter):
        midpoints = (centres[..., :-1] + centres[..., 1:]) / 2
        inner = torch.searchsorted(xs, midpoints.reshape(xs.shape[0], -1), right=True)
        inner = inner.view(midpoints.shape).minimum(last)
        if torch.equal(inner, bounds[..., 1:-1]):
            break
        bounds[..., 1:-1] = inner
        sizes = bounds.diff(dim=-1)
        centres = torch.where(sizes > 0, gather_rows(prefix, bounds).diff(dim=-1) / sizes, centres)
    ends = bounds[..., 1:]
    return (ends if n_clusters.dim() == 2 else ends.squeeze(1)).contiguous()
