"""Exact 1-D K-Means on sorted rows by dynamic programming over interval partitions (compiled)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from vse_ray.compiled_kernels import njit


@njit(inline="always")
def interval_cost(
    s1: np.ndarray, s2: np.ndarray, w: np.ndarray, inverse: np.ndarray, i: int, j: int
) -> float:
    """Within-cluster sum of squares of the distinct values i..j-1 from weighted prefix sums (0 if empty);
    ``inverse[c]`` = 1 / c (a multiplication is several times faster than a division)."""
    total = s1[j] - s1[i]
    return max((s2[j] - s2[i]) - total * total * inverse[w[j] - w[i]], 0.0)


@njit
def exact_tables(
    x: np.ndarray,
    count: int,
    k_max: int,
    s1: np.ndarray,
    s2: np.ndarray,
    w: np.ndarray,
    inverse: np.ndarray,
    opt: np.ndarray,
    layers: np.ndarray,
    stack: np.ndarray,
) -> int:
    """Fill ``opt`` (k_max + 1, n + 1): opt[t, j] is where the last of t clusters starts in the best
    partition of the first j distinct values of ``x[:count]`` into at most t intervals; returns the number
    of distinct values m. ``s1``, ``s2``, ``w`` (n + 1) receive the weighted prefix sums of the values
    (shifted by the middle value, for precision), their squares and their multiplicities (int64);
    ``inverse`` (n + 1) holds 1 / c (0 at c = 0); ``layers``
    (2, n + 1) and ``stack`` (>= 2 log2(n + 2) + 2, 4) are scratch.

    D_t(j) = min_{i <= j} D_{t-1}(i) + cost(i, j) (an empty interval costs 0). The leftmost best i grows
    with j (the interval cost satisfies the quadrangle inequality), so each layer is solved by divide and
    conquer over j with an explicit stack: O(k m log m) per row instead of O(k m²). The last layer is
    only needed at j = m (O(m)). The argmin scans are branch-free (their comparisons are unpredictable).
    """
    shift = x[count // 2] if count > 0 else 0.0
    m, total, squares, weight = 0, 0.0, 0.0, 0
    s1[0] = s2[0] = 0.0
    w[0] = 0
    for p in range(count):
        if p > 0 and x[p] != x[p - 1]:  # a new distinct value: close the previous one
            m += 1
            s1[m], s2[m], w[m] = total, squares, weight
        v = x[p] - shift
        total += v
        squares += v * v
        weight += 1
    if count > 0:
        m += 1
        s1[m], s2[m], w[m] = total, squares, weight
    for j in range(m + 1):
        layers[0, j] = interval_cost(s1, s2, w, inverse, 0, j)
        opt[1, j] = 0
    for t in range(2, k_max + 1):
        previous, current = layers[t % 2], layers[(t + 1) % 2]
        top = 0
        stack[0, 0], stack[0, 1], stack[0, 2], stack[0, 3] = (m if t == k_max else 0), m, 0, m
        while top >= 0:
            j_lo, j_hi, i_lo, i_hi = stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3]
            top -= 1
            if j_lo > j_hi:
                continue
            mid = (j_lo + j_hi) // 2
            best, best_at = np.inf, i_lo
            for i in range(i_lo, min(mid, i_hi) + 1):
                value = previous[i] + interval_cost(s1, s2, w, inverse, i, mid)
                better = value < best
                best_at = i * better + best_at * (1 - better)
                best = min(value, best)
            current[mid], opt[t, mid] = best, best_at
            top += 1
            stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3] = j_lo, mid - 1, i_lo, best_at
            top += 1
            stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3] = mid + 1, j_hi, best_at, i_hi
    return m


@njit
def inverses(n: int) -> np.ndarray:
    """1 / c for c = 0..n, with 0 at c = 0 (an empty interval costs 0)."""
    inverse = np.zeros(n + 1)
    for c in range(1, n + 1):
        inverse[c] = 1.0 / c
    return inverse


@njit
def exact_ends(k: int, m: int, w: np.ndarray, opt: np.ndarray, count: int, ends: np.ndarray) -> None:
    """Exclusive end positions (in the sorted row) of the best partition into k intervals, from ``opt``;
    ``ends`` entries from k on are set to ``count``. Empty intervals (fewer distinct values than k) end
    where the previous one does."""
    ends[:] = count
    j = m
    for t in range(k, 0, -1):
        ends[t - 1] = w[j]
        j = opt[t, j]


@njit
def exact_rows(xs: np.ndarray, counts: np.ndarray, ks: np.ndarray) -> np.ndarray:
    """(R, G, k_max) cluster ends of G exact clusterings per row, k = ``ks[r, g]``."""
    n_rows, n_groups = ks.shape
    n, k_max = xs.shape[1], ks.max()
    ends = np.empty((n_rows, n_groups, k_max), dtype=np.int64)
    s1, s2, w = np.empty(n + 1), np.empty(n + 1), np.empty(n + 1, dtype=np.int64)
    inverse = inverses(n)
    opt = np.zeros((k_max + 1, n + 1), dtype=np.int64)
    layers, stack = np.empty((2, n + 1)), np.empty((2 * n + 4, 4), dtype=np.int64)
    for r in range(n_rows):
        m = exact_tables(xs[r], counts[r], ks[r].max(), s1, s2, w, inverse, opt, layers, stack)
        for g in range(n_groups):
            exact_ends(ks[r, g], m, w, opt, counts[r], ends[r, g])
    return ends


def kmeans_1d_exact_sorted(xs: ArrayLike, counts: ArrayLike, n_clusters: ArrayLike) -> np.ndarray:
    """Exact (globally optimal) k-means of many sorted 1-D rows, several k per row, in compiled loops.

    In one dimension the optimal clusters are intervals of the sorted values, so the least within-cluster
    sum of squares over all partitions into k intervals is the k-means optimum (Wang & Song 2011,
    Ckmeans.1d.dp). Equal values always share a cluster (cuts lie between distinct values only); when a
    row has fewer distinct values than k, the extra clusters are empty. Among equally good partitions the
    one with the earliest cuts is returned.

    Args:
        xs: (R, n) ascending float64 rows; entries at positions >= counts[r] are padding.
        counts: (R,) number of real values per row.
        n_clusters: (R,) or (R, G) k per row, 1 <= k.

    Returns:
        (R, k_max) - or (R, G, k_max) - int64 exclusive end position of each cluster, clusters ordered by
        increasing centre; clusters t >= k are empty and end at counts[r] (as ``kmeans_1d_sorted``).
    """
    xs = np.ascontiguousarray(xs, dtype=np.float64)
    counts = np.ascontiguousarray(counts, dtype=np.int64)
    ks = np.asarray(n_clusters, dtype=np.int64)
    if ks.size and ks.min() < 1:
        raise ValueError(f"n_clusters must be >= 1, got {int(ks.min())}")
    ends = exact_rows(xs, counts, np.ascontiguousarray(ks.reshape(len(xs), -1)))
    return ends if ks.ndim == 2 else ends[:, 0]
