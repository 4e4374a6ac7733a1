"""Batched mean Silhouette of interval clusterings of sorted 1-D rows, from prefix sums."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from vse_ray.losses.clustering.kmeans_1d import prefix_sums

TINY = 5e-324  # the smallest subnormal: max(denominator, TINY) only differs where the denominator is 0


def silhouette_1d_sorted(
    xs: ArrayLike, counts: ArrayLike, ends: ArrayLike, prefix: np.ndarray | None = None
) -> np.ndarray:
    """Mean Silhouette (ladder eq. 10-12; Rousseeuw) of each row's interval clustering, shape (R,) or (R, G).

    a = mean distance to the other members of the own cluster (eq. 10), b = smallest mean distance to
    another non-empty cluster (eq. 11), Sil = (b - a) / max(a, b) (eq. 12); Sil = 0 in singleton clusters,
    where every other cluster is empty, or where a = b = 0, as scikit-learn's ``silhouette_samples`` gives.
    Another cluster lies wholly on one side of x, so its mean distance is |x - its centre|, and the nearest
    one is the next non-empty cluster above or below. Members of the own interval [s, e) up to position p
    are <= x_p and the rest >= x_p, so the within-cluster distance sum is two prefix-sum differences:
    2 ((p + 1) x_p - P[p + 1]) - (s + e) x_p + P[s] + P[e]; sums below the rounding noise of the prefix sums
    are set to 0 (duplicated values). Per-cluster constants are spread onto their positions, the per-point
    terms are computed in place over all rows and clusterings, and summed per cluster (``reduceat``).

    Args:
        xs: (R, n) ascending float64 rows, padding beyond counts[r].
        counts: (R,) number of real values per row.
        ends: (R, K) - or (R, G, K), G clusterings per row - exclusive cluster ends as returned by
            ``kmeans_1d_sorted`` (the last one is counts[r]).
        prefix: ``prefix_sums(xs, counts)`` when already computed.
    """
    xs, counts, ends = np.asarray(xs, dtype=np.float64), np.asarray(counts), np.asarray(ends)
    n_rows, n = xs.shape
    grouped = ends.reshape(n_rows, -1, ends.shape[-1])
    prefix = prefix_sums(xs, counts) if prefix is None else prefix
    starts = np.concatenate((np.zeros_like(grouped[..., :1]), grouped[..., :-1]), axis=-1)
    sizes = grouped - starts
    row_at = (np.arange(n_rows) * (n + 1))[:, None, None]
    p_start, p_end = prefix.take(starts + row_at), prefix.take(grouped + row_at)
    centres = (p_end - p_start) / np.maximum(sizes, 1)
    above = np.minimum.accumulate(np.where(sizes > 0, centres, np.inf)[..., ::-1], axis=-1)[..., ::-1]
    below = np.maximum.accumulate(np.where(sizes > 0, centres, -np.inf), axis=-1)
    next_above = np.concatenate((above[..., 1:], np.full_like(above[..., :1], np.inf)), axis=-1)
    next_below = np.concatenate((np.full_like(below[..., :1], -np.inf), below[..., :-1]), axis=-1)
    has_sil = (sizes > 1) & ~(np.isinf(next_above) & np.isinf(next_below))
    # every position takes its cluster's constants; padding positions (past the last end) the last one's
    seg_sizes = sizes.copy()
    seg_sizes[..., -1] += n - grouped[..., -1]
    shape, repeats = grouped.shape[:-1] + (n,), seg_sizes.ravel()
    bounds, ends_sum, mates, centre_above, centre_below = (
        np.repeat(v.ravel(), repeats).reshape(shape)
        for v in ((starts + grouped).astype(np.float64), p_start + p_end, np.maximum(sizes - 1.0, 1.0))
        + (next_above, next_below)
    )
    pos = np.arange(n)
    x = np.where(pos < counts[:, None], xs, 0.0)[:, None, :]
    # in place: a <- within-cluster distance sum / mates, b <- nearest other cluster, then the Silhouette
    a = np.multiply(bounds, x, out=bounds)
    np.subtract(2.0 * (pos + 1) * x - 2.0 * prefix[:, None, 1:], a, out=a)
    np.add(a, ends_sum, out=a)
    noise = 64 * np.finfo(np.float64).eps * np.abs(prefix).max(-1)[:, None, None]
    np.copyto(a, 0.0, where=a <= noise)
    np.divide(a, mates, out=a)
    b = np.subtract(centre_above, x, out=centre_above)
    np.minimum(b, np.subtract(x, centre_below, out=centre_below), out=b)
    denom = np.maximum(np.maximum(a, b, out=mates), TINY, out=mates)
    sil = np.subtract(b, a, out=b)
    # sums over [s, e) of each cluster and, apart, over the padding [counts, n): the same whatever K is
    offsets = n * np.arange(sil.size // n).reshape(shape[:-1] + (1,))
    cuts = np.concatenate((starts, grouped[..., -1:]), axis=-1) + offsets
    with np.errstate(invalid="ignore", over="ignore"):  # lonely clusters (inf / inf) and padding
        np.divide(sil, denom, out=sil)
        per_cluster = np.add.reduceat(np.append(sil.ravel(), 0.0), cuts.ravel())
    per_cluster = per_cluster.reshape(cuts.shape)[..., :-1]
    scores = np.where(has_sil, per_cluster, 0.0).sum(-1) / np.maximum(counts, 1)[:, None]
    return scores.reshape(ends.shape[:-1])
