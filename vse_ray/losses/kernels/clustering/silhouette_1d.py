"""Mean Silhouette of interval clusterings of sorted 1-D rows, from prefix sums (compiled)."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from vse_ray.compiled_kernels import njit
from vse_ray.losses.kernels.clustering.kmeans_1d import prefix_sums

TINY = 5e-324  # the smallest subnormal: max(denominator, TINY) only differs where the denominator is 0
NOISE = 64 * np.finfo(np.float64).eps  # relative rounding noise of within-cluster sums from prefix sums
BLOCK = 128  # numpy's pairwise-summation block


@njit
def pairwise_sum(v: np.ndarray, lo: int, hi: int) -> float:
    """Sum of ``v[lo:hi]`` in numpy's pairwise order: 8 accumulators per block of <= 128 values, longer
    runs split in halves rounded to multiples of 8."""
    n = hi - lo
    if n < 8:
        total = -0.0
        for i in range(lo, hi):
            total += v[i]
        return total
    if n <= BLOCK:
        r0, r1, r2, r3 = v[lo], v[lo + 1], v[lo + 2], v[lo + 3]
        r4, r5, r6, r7 = v[lo + 4], v[lo + 5], v[lo + 6], v[lo + 7]
        i = lo + 8
        while i < hi - n % 8:
            r0 += v[i]
            r1 += v[i + 1]
            r2 += v[i + 2]
            r3 += v[i + 3]
            r4 += v[i + 4]
            r5 += v[i + 5]
            r6 += v[i + 6]
            r7 += v[i + 7]
            i += 8
        total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < hi:
            total += v[i]
            i += 1
        return total
    half = n // 2
    half -= half % 8
    return pairwise_sum(v, lo, lo + half) + pairwise_sum(v, lo + half, hi)


@njit
def silhouette_row(
    x: np.ndarray, count: int, ends: np.ndarray, prefix: np.ndarray, noise: float, sil: np.ndarray
) -> float:
    """Mean Silhouette of the interval clustering ``ends`` of one ascending row (see silhouette_1d_sorted).

    ``noise`` bounds the rounding error of the within-cluster sums; ``sil`` is scratch of length >= count.
    A cluster's Silhouettes are summed as ``np.add.reduceat`` does (first value + pairwise sum of the
    rest) and the clusters in order, so the result is the vectorised numpy formula's bit for bit.
    """
    total, start = 0.0, 0
    for t in range(ends.shape[0]):
        end = ends[t]
        if end - start > 1:
            below, above = -math.inf, math.inf  # centres of the nearest non-empty clusters on each side
            lo = 0
            for u in range(ends.shape[0]):
                if ends[u] > lo:
                    centre = (prefix[ends[u]] - prefix[lo]) / (ends[u] - lo)
                    if u < t:
                        below = max(below, centre)
                    elif u > t:
                        above = min(above, centre)
                lo = ends[u]
            if not (math.isinf(above) and math.isinf(below)):
                span, ends_sum, mates = float(start + end), prefix[start] + prefix[end], end - start - 1.0
                for p in range(start, end):
                    # eq. 10 from two prefix-sum differences: members up to p are <= x_p, the rest >= x_p
                    a = (2.0 * (p + 1) * x[p] - 2.0 * prefix[p + 1]) - span * x[p]
                    a = a + ends_sum
                    a = (0.0 if a <= noise else a) / mates
                    b = min(above - x[p], x[p] - below)  # eq. 11: the nearest other cluster
                    sil[p] = (b - a) / max(max(a, b), TINY)  # eq. 12
                total += sil[start] + pairwise_sum(sil, start + 1, end)
        start = end
    return total / max(count, 1)


@njit
def row_noise(prefix: np.ndarray) -> float:
    """Rounding noise of within-cluster sums taken from the prefix sums ``prefix`` of one row."""
    largest = 0.0
    for value in prefix:
        largest = max(largest, abs(value))
    return NOISE * largest


@njit
def silhouette_rows(xs: np.ndarray, counts: np.ndarray, ends: np.ndarray, prefix: np.ndarray) -> np.ndarray:
    """(R, G) mean Silhouette of the G clusterings ``ends`` (R, G, K) of each row; see ``silhouette_row``."""
    n_rows, n_groups = ends.shape[:2]
    scores = np.empty((n_rows, n_groups))
    sil = np.empty(xs.shape[1])
    for r in range(n_rows):
        noise = row_noise(prefix[r])
        for g in range(n_groups):
            scores[r, g] = silhouette_row(xs[r], counts[r], ends[r, g], prefix[r], noise, sil)
    return scores


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
    are set to 0 (duplicated values). One compiled pass per clustering: O(n + K^2).

    Args:
        xs: (R, n) ascending float64 rows, padding beyond counts[r].
        counts: (R,) number of real values per row.
        ends: (R, K) - or (R, G, K), G clusterings per row - exclusive cluster ends as returned by
            ``kmeans_1d_sorted`` (the last one is counts[r]).
        prefix: ``prefix_sums(xs, counts)`` when already computed.
    """
    xs = np.ascontiguousarray(xs, dtype=np.float64)
    counts = np.ascontiguousarray(counts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    prefix = prefix_sums(xs, counts) if prefix is None else np.ascontiguousarray(prefix, dtype=np.float64)
    grouped = np.ascontiguousarray(ends.reshape(len(xs), -1, ends.shape[-1]))
    return silhouette_rows(xs, counts, grouped, prefix).reshape(ends.shape[:-1])
