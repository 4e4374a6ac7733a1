"""Batched mean Silhouette of interval clusterings of sorted 1-D rows, from prefix sums."""

from __future__ import annotations

import torch
from torch import Tensor

from vse_ray.losses.clustering.kmeans_1d import gather_rows, prefix_sums


def cluster_of_positions(ends: Tensor, n: int) -> Tensor:
    """Cluster index of every position 0..n-1 of the rows (..., n), from exclusive ``ends`` (..., K).

    Counts the ends <= position (a running sum of end markers); positions past the last end get K - 1.
    """
    markers = torch.zeros((*ends.shape[:-1], n + 1), dtype=torch.long, device=ends.device)
    markers.scatter_add_(-1, ends[..., :-1], torch.ones_like(ends[..., :-1]))
    return markers[..., :n].cumsum(-1)


def silhouette_1d_sorted(xs: Tensor, counts: Tensor, ends: Tensor) -> Tensor:
    """Mean Silhouette (ladder eq. 10-12; Rousseeuw) of each row's interval clustering, shape (R,) or (R, G).

    a = mean distance to the other members of the own cluster (eq. 10), b = smallest mean distance to
    another non-empty cluster (eq. 11), Sil = (b - a) / max(a, b) (eq. 12); Sil = 0 in singleton clusters,
    where every other cluster is empty, or where a = b = 0, as scikit-learn's ``silhouette_samples`` gives.
    Another cluster lies wholly on one side of x, so its mean distance is |x - its centre|, and the nearest
    one is the next non-empty cluster above or below. Members of the own interval [s, e) up to position p
    are <= x_p and the rest >= x_p, so the within-cluster distance sum is two prefix-sum differences:
    x_p (2 (p + 1) - s - e) - 2 P[p + 1] + P[s] + P[e]; sums below the rounding noise of the prefix sums
    are set to 0 (duplicated values). O(n) per row after O(k) per-cluster lookups.

    Args:
        xs: (R, n) ascending rows, padding beyond counts[r].
        counts: (R,) number of real values per row.
        ends: (R, K) - or (R, G, K), G clusterings per row - exclusive cluster ends as returned by
            ``kmeans_1d_sorted``.
    """
    n_rows, n = xs.shape
    grouped = ends if ends.dim() == 3 else ends.unsqueeze(1)
    prefix = prefix_sums(xs, counts)
    starts = torch.nn.functional.pad(grouped[..., :-1], (1, 0))
    sizes = grouped - starts
    p_start, p_end = gather_rows(prefix, starts), gather_rows(prefix, grouped)
    centres = (p_end - p_start) / sizes.clamp(min=1)
    inf = torch.tensor(float("inf"), dtype=xs.dtype, device=xs.device)
    above = torch.where(sizes > 0, centres, inf).flip(-1).cummin(-1).values.flip(-1)
    below = torch.where(sizes > 0, centres, -inf).cummax(-1).values
    next_above = torch.nn.functional.pad(above[..., 1:], (0, 1), value=float("inf"))
    next_below = torch.nn.functional.pad(below[..., :-1], (1, 0), value=float("-inf"))
    lonely = torch.isinf(next_above) & torch.isinf(next_below)
    per_cluster = torch.stack(
        (
            p_start,
            p_end,
            (starts + grouped).to(xs.dtype),
            (sizes - 1).clamp(min=1).to(xs.dtype),
            next_above,
            next_below,
            ((sizes > 1) & ~lonely).to(xs.dtype),
        )
    )
    own = cluster_of_positions(grouped, n)
    own_start_p, own_end_p, own_bounds, own_mates, own_above, own_below, has_sil = per_cluster.gather(
        -1, own.expand(per_cluster.shape[0], *own.shape)
    )
    pos = torch.arange(n, device=xs.device)
    valid = pos < counts.unsqueeze(-1)
    x = xs.masked_fill(~valid, 0.0).unsqueeze(1)
    total = x * (2 * (pos + 1) - own_bounds) - 2 * prefix[:, None, 1:] + own_start_p + own_end_p
    noise = 64 * torch.finfo(xs.dtype).eps * prefix.abs().amax(-1).view(-1, 1, 1)
    a = total.masked_fill(total <= noise, 0.0) / own_mates
    b = torch.minimum(own_above - x, x - own_below)
    denom = torch.maximum(a, b)
    defined = (has_sil > 0) & (denom > 0) & valid.unsqueeze(1)
    sil = torch.where(defined, (b - a) / denom, 0.0)
    scores = sil.sum(-1) / counts.clamp(min=1).unsqueeze(-1)
    return scores if ends.dim() == 3 else scores.squeeze(1)
