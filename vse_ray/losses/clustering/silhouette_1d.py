"""Batched mean Silhouette of interval clusterings of sorted 1-D rows, from prefix sums."""

from __future__ import annotations

import torch
from torch import Tensor

from vse_ray.losses.clustering.kmeans_1d import prefix_sums


def within_cluster_distance_sums(x: Tensor, prefix: Tensor, starts: Tensor, ends: Tensor) -> Tensor:
    """Σ_{y in [start_p, end_p)} |x_p - y| for every position p of sorted rows x (R, n), shape (R, n).

    Members of the interval up to position p are <= x_p and the rest >= x_p, so the sum is two prefix-sum
    differences: x_p (s - start) - (P[s] - P[start]) + (P[end] - P[s]) - x_p (end - s), s = clamp(p + 1,
    start, end). Sums below the rounding noise of the prefix sums are set to 0 (duplicated values).
    """
    pos = torch.arange(1, x.shape[-1] + 1, device=x.device).expand_as(starts)
    split = torch.clamp(pos, starts, ends)
    p_split = prefix.gather(-1, split)
    total = (
        x * (2 * split - starts - ends) - 2 * p_split + prefix.gather(-1, starts) + prefix.gather(-1, ends)
    )
    noise = 64 * torch.finfo(x.dtype).eps * prefix.abs().amax(-1, keepdim=True)
    return total.masked_fill(total <= noise, 0.0)


def silhouette_1d_sorted(xs: Tensor, counts: Tensor, ends: Tensor) -> Tensor:
    """Mean Silhouette (ladder eq. 10-12; Rousseeuw) of each row's interval clustering, shape (R,).

    a = mean distance to the other members of the own cluster (eq. 10), b = smallest mean distance to
    another non-empty cluster (eq. 11), Sil = (b - a) / max(a, b) (eq. 12); Sil = 0 in singleton clusters,
    where every other cluster is empty, or where a = b = 0, as scikit-learn's ``silhouette_samples`` gives.
    Another cluster lies wholly on one side of x, so its mean distance is |x - its centre|, and the nearest
    one is the next non-empty cluster above or below: b costs O(n) per row after O(k) prefix scans.

    Args:
        xs: (R, n) ascending rows, padding beyond counts[r].
        counts: (R,) number of real values per row.
        ends: (R, K) exclusive cluster ends as returned by ``kmeans_1d_sorted``.
    """
    n_rows, n = xs.shape
    prefix = prefix_sums(xs, counts)
    starts = torch.nn.functional.pad(ends[:, :-1], (1, 0))
    sizes = ends - starts
    centres = (prefix.gather(-1, ends) - prefix.gather(-1, starts)) / sizes.clamp(min=1)
    inf = torch.tensor(float("inf"), dtype=xs.dtype, device=xs.device)
    above = torch.where(sizes > 0, centres, inf).flip(-1).cummin(-1).values.flip(-1)
    below = torch.where(sizes > 0, centres, -inf).cummax(-1).values
    next_above = torch.nn.functional.pad(above[:, 1:], (0, 1), value=float("inf"))
    next_below = torch.nn.functional.pad(below[:, :-1], (1, 0), value=float("-inf"))
    pos = torch.arange(n, device=xs.device).expand(n_rows, n).contiguous()
    valid = pos < counts.unsqueeze(-1)
    x = xs.masked_fill(~valid, 0.0)
    own = torch.searchsorted(ends, pos, right=True).clamp(max=ends.shape[-1] - 1)
    own_start, own_end = starts.gather(-1, own), ends.gather(-1, own)
    own_size = own_end - own_start
    a = within_cluster_distance_sums(x, prefix, own_start, own_end) / (own_size - 1).clamp(min=1)
    b = torch.minimum(next_above.gather(-1, own) - x, x - next_below.gather(-1, own))
    denom = torch.maximum(a, b)
    defined = valid & (own_size > 1) & torch.isfinite(b) & (denom > 0)
    sil = torch.where(defined, (b - a) / denom.masked_fill(~defined, 1.0), 0.0)
    return sil.sum(-1) / counts.clamp(min=1)
