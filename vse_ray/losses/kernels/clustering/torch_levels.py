"""Adaptive ladder levels as batched torch operations on the relevance's device (no host copy).

The torch path of ``adaptive_levels``: the same sorted-row steps as the compiled kernels (Lloyd or exact
K-Means of interval clusterings, Silhouette from prefix sums, levels from cluster starts), vectorised over
all rows instead of looped. Results agree with the compiled kernels up to float rounding: a clustering
or a choice of L* can differ only where two candidates tie within rounding.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from vse_ray.losses.kernels.clustering.silhouette_1d import NOISE, TINY


def sorted_candidates(values: Tensor, mask: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(xs, counts, prefix): each row's candidate values ascending (+inf padding), their number, and the
    running sums of the real values (R, n + 1), float64."""
    xs = torch.where(mask, values, torch.inf).sort(-1).values
    counts = mask.sum(-1)
    real = torch.arange(xs.shape[-1], device=xs.device) < counts[:, None]
    prefix = torch.nn.functional.pad(torch.where(real, xs, 0.0).cumsum(-1), (1, 0))
    return xs, counts, prefix


def lloyd_ends(xs: Tensor, counts: Tensor, k: int, max_iter: int, prefix: Tensor) -> Tensor:
    """(R, k) cluster ends of Lloyd's algorithm on every row at once, as ``lloyd_row``: quantile centres,
    boundaries after the last value <= each midpoint (``searchsorted``), interval means from ``prefix``,
    an emptied cluster keeps its centre; stops when no row's assignment changes after the first update.
    A converged row stays fixed, so each row's result is the one it gets alone."""
    n = xs.shape[-1]
    t = torch.arange(k, device=xs.device)
    centres = xs.gather(-1, ((2 * t + 1) * counts[:, None] // (2 * k)).clamp(max=n - 1))
    ends = counts[:, None].expand(-1, k).clone()
    for step in range(max_iter):
        mid = (centres[:, :-1] + centres[:, 1:]) / 2
        inner = torch.searchsorted(xs, mid.contiguous(), right=True).minimum(counts[:, None])
        changed = bool((inner != ends[:, :-1]).any())
        ends[:, :-1] = inner
        if step > 0 and not changed:
            break
        starts = torch.nn.functional.pad(ends[:, :-1], (1, 0))
        sizes = ends - starts
        sums = prefix.gather(-1, ends) - prefix.gather(-1, starts)
        centres = torch.where(sizes > 0, sums / sizes.clamp(min=1), centres)
    return ends


CHUNK_ELEMENTS = 2**24  # cost-matrix entries per chunk of rows in ``exact_ends`` (128 MB in float64)


def exact_ends(xs: Tensor, counts: Tensor, ks: Sequence[int]) -> Tensor:
    """(R, G, k_max) cluster ends of the exact k-means of every row for each of the G values of ``ks``, by
    dynamic programming over interval partitions: D_t(j) = min_{i <= j} D_{t-1}(i) + cost(i, j) as one
    (R, n+1, n+1) minimum per layer. Cuts lie between distinct values only (equal values share a cluster); an
    empty interval costs 0; among equal minima the earliest cut wins, as in ``exact_tables``. Rows go in
    chunks of at most ``CHUNK_ELEMENTS`` cost entries, so memory stays bounded for long rows."""
    rows = max(1, CHUNK_ELEMENTS // (xs.shape[-1] + 1) ** 2)
    chunks = [_exact_ends(x, c, ks) for x, c in zip(xs.split(rows), counts.split(rows), strict=True)]
    return torch.cat(chunks) if len(chunks) > 1 else chunks[0]


def _exact_ends(xs: Tensor, counts: Tensor, ks: Sequence[int]) -> Tensor:
    """``exact_ends`` of one chunk of rows."""
    n_rows, n = xs.shape
    k_max = max(ks)
    pos = torch.arange(n + 1, device=xs.device)
    real = pos[:-1] < counts[:, None]
    shift = xs.gather(-1, (counts[:, None] // 2).clamp(max=n - 1))
    shifted = torch.where(real, xs - shift, 0.0)
    s1 = torch.nn.functional.pad(shifted.cumsum(-1), (1, 0))
    s2 = torch.nn.functional.pad((shifted * shifted).cumsum(-1), (1, 0))
    size = (pos[None, :] - pos[:, None]).to(xs.dtype)  # [i, j] = j - i
    total = s1[:, None, :] - s1[:, :, None]
    cost = ((s2[:, None, :] - s2[:, :, None]) - total * total / size.clamp(min=1)).clamp(min=0)
    cost = torch.where(size >= 0, cost, torch.inf)
    inside = torch.cat((torch.zeros_like(real[:, :1]), xs[:, 1:] == xs[:, :-1]), -1)
    cut = ~torch.nn.functional.pad(inside & real, (0, 1)) & (pos <= counts[:, None])  # (R, n + 1)
    layer = torch.where(cut, cost[:, 0], torch.inf)
    starts = [torch.zeros_like(cut, dtype=torch.long)]
    for _ in range(2, k_max + 1):
        layer, start = (layer[:, :, None] + cost).min(1)
        layer = torch.where(cut, layer, torch.inf)
        starts.append(start)
    ends = counts[:, None, None].expand(n_rows, len(ks), k_max).clone()
    for g, k in enumerate(ks):
        j = counts.clone()
        for t in range(k, 0, -1):
            ends[:, g, t - 1] = j
            j = starts[t - 1].gather(-1, j[:, None]).squeeze(-1)
    return ends


def silhouettes(xs: Tensor, counts: Tensor, ends: Tensor, prefix: Tensor) -> Tensor:
    """(R, G) mean Silhouette (ladder eq. 10-12) of the interval clusterings ``ends`` (R, G, K), with the
    prefix-sum formulas of ``silhouette_row``: a(p) from two prefix-sum differences, b(p) the distance to
    the nearest non-empty cluster centre on either side; 0 for singleton clusters and lone clusters."""
    n_rows, n_groups, _ = ends.shape
    n = xs.shape[-1]
    starts = torch.nn.functional.pad(ends[..., :-1], (1, 0))
    sizes = ends - starts
    grouped = prefix[:, None, :].expand(n_rows, n_groups, n + 1)
    at_start, at_end = grouped.gather(-1, starts), grouped.gather(-1, ends)
    centres = (at_end - at_start) / sizes.clamp(min=1)
    filled = sizes > 0
    below = torch.where(filled, centres, -torch.inf).cummax(-1).values
    below = torch.nn.functional.pad(below[..., :-1], (1, 0), value=-torch.inf)
    above = torch.where(filled, centres, torch.inf).flip(-1).cummin(-1).values.flip(-1)
    above = torch.nn.functional.pad(above[..., 1:], (0, 1), value=torch.inf)
    pos = torch.arange(n, device=xs.device)
    cluster = torch.searchsorted(ends.contiguous(), pos.expand(n_rows, n_groups, n).contiguous(), right=True)
    cluster = cluster.clamp(max=ends.shape[-1] - 1)
    start, end = starts.gather(-1, cluster), ends.gather(-1, cluster)
    real = pos < counts[:, None]
    x = torch.where(real, xs, 0.0)[:, None, :]
    a = (2.0 * (pos + 1) * x - 2.0 * prefix[:, None, 1:]) - (start + end).to(xs.dtype) * x
    a = a + (at_start.gather(-1, cluster) + at_end.gather(-1, cluster))
    noise = NOISE * prefix.abs().amax(-1)[:, None, None]
    a = torch.where(a <= noise, 0.0, a) / (end - start - 1).clamp(min=1)
    near_above, near_below = above.gather(-1, cluster), below.gather(-1, cluster)
    b = torch.minimum(near_above - x, x - near_below)
    sil = (b - a) / torch.maximum(a, b).clamp(min=TINY)
    counted = real[:, None, :] & (end - start > 1) & ~(near_above.isinf() & near_below.isinf())
    return torch.where(counted, sil, 0.0).sum(-1) / counts.clamp(min=1)[:, None]


def torch_adaptive_levels(
    relevance: Tensor, candidates: Tensor, l_min: int, l_max: int, max_iter: int, exact: bool
) -> tuple[Tensor, Tensor]:
    """``adaptive_levels`` with torch operations on the relevance's device; see there."""
    lead, n_cols = relevance.shape[:-1], relevance.shape[-1]
    values = relevance.detach().to(torch.float64).reshape(-1, n_cols)
    mask = candidates.reshape(-1, n_cols)
    xs, counts, prefix = sorted_candidates(values, mask)
    k_values = list(range(l_min, l_max + 1))
    if exact:
        ends = exact_ends(xs, counts, k_values)
    else:
        empty = counts[:, None].expand(-1, l_max)  # clusters t >= k end at the row's count
        ends = torch.stack(
            [torch.cat((lloyd_ends(xs, counts, k, max_iter, prefix), empty[:, k:]), -1) for k in k_values], 1
        )
    ks = torch.arange(l_min, l_max + 1, device=xs.device)  # on the device: no host copy
    scores = silhouettes(xs, counts, ends, prefix).masked_fill(ks > counts[:, None], -torch.inf)
    clustered = counts >= l_min
    best = scores.argmax(-1)
    n_levels = torch.where(clustered, ks[best], 1)
    chosen = ends[torch.arange(len(best), device=xs.device), best]  # (R, l_max)
    first = xs.gather(-1, chosen[:, :-1].clamp(max=n_cols - 1))
    t = torch.arange(l_max - 1, device=xs.device)
    first = torch.where((chosen[:, :-1] < counts[:, None]) & (t < n_levels[:, None] - 1), first, torch.inf)
    reached = (mask[:, :, None] & (values[:, :, None] >= first[:, None, :])).sum(-1)
    levels = torch.where(mask, n_levels[:, None] - reached, 0)
    return levels.view(*lead, n_cols), n_levels.view(lead)
