"""Lloyd K-Means on sorted 1-D rows: clusters are contiguous intervals of each sorted row (compiled)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from vse_ray.compiled_kernels import njit


@njit
def prefix_sums(xs: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(R, n + 1) running sums of each sorted row's first ``counts[r]`` values (padding counts as 0)."""
    prefix = np.empty((xs.shape[0], xs.shape[1] + 1))
    for r in range(xs.shape[0]):
        row_prefix_sums(xs[r], counts[r], prefix[r])
    return prefix


@njit
def row_prefix_sums(x: np.ndarray, count: int, out: np.ndarray) -> None:
    """Write the running sums of ``x[:count]`` (then constant) into ``out``; sequential, as ``np.cumsum``."""
    total = 0.0
    out[0] = 0.0
    for p in range(x.shape[0]):
        if p < count:
            total += x[p]
        out[p + 1] = total


@njit
def count_at_most(x: np.ndarray, count: int, value: float) -> int:
    """Number of the ascending values ``x[:count]`` that are <= ``value`` (binary search)."""
    lo, hi = 0, count
    while lo < hi:
        mid = (lo + hi) // 2
        if x[mid] <= value:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit
def lloyd_row(
    x: np.ndarray,
    count: int,
    k: int,
    max_iter: int,
    prefix: np.ndarray,
    centres: np.ndarray,
    ends: np.ndarray,
) -> None:
    """Lloyd's algorithm on one ascending row ``x[:count]``: exclusive cluster ends written to ``ends``.

    Centres start at the (t + 1/2)/k quantiles ``x[(2t + 1) count // (2k)]``. Cluster t ends after the
    last value <= the midpoint of centres t and t + 1 (ties go to the lower centre); the new centres are
    the interval means from ``prefix``, and an emptied cluster keeps its centre. Iteration stops once the
    assignment no longer changes after the first update, or after ``max_iter`` assignments. Entries of
    ``ends`` from k on are set to ``count`` (empty clusters); ``centres`` is scratch of length >= k.
    """
    n = x.shape[0]
    for t in range(k):
        centres[t] = x[min((2 * t + 1) * count // (2 * k), n - 1)]
    ends[:] = count
    for step in range(max_iter):
        changed = False
        for t in range(k - 1):
            mid = (centres[t] + centres[t + 1]) / 2
            if step == 0:
                end = count_at_most(x, count, mid)
            else:  # boundaries move little once the centres are means: walk from the last one
                end = ends[t]
                while end < count and x[end] <= mid:
                    end += 1
                while end > 0 and x[end - 1] > mid:
                    end -= 1
            if end != ends[t]:
                changed = True
                ends[t] = end
        if step > 0 and not changed:
            break
        start = 0
        for t in range(k):
            size = ends[t] - start
            if size > 0:
                centres[t] = (prefix[ends[t]] - prefix[start]) / size
            start = ends[t]


@njit
def kmeans_rows(
    xs: np.ndarray, counts: np.ndarray, ks: np.ndarray, max_iter: int, prefix: np.ndarray
) -> np.ndarray:
    """(R, G, k_max) cluster ends of G clusterings per row, k = ``ks[r, g]``; see ``lloyd_row``."""
    n_rows, n_groups = ks.shape
    k_max = ks.max()
    ends = np.empty((n_rows, n_groups, k_max), dtype=np.int64)
    centres = np.empty(k_max)
    for r in range(n_rows):
        for g in range(n_groups):
            lloyd_row(xs[r], counts[r], ks[r, g], max_iter, prefix[r], centres, ends[r, g])
    return ends


def kmeans_1d_sorted(
    xs: ArrayLike,
    counts: ArrayLike,
    n_clusters: ArrayLike,
    max_iter: int = 100,
    prefix: np.ndarray | None = None,
) -> np.ndarray:
    """Lloyd's algorithm for k-means, run on many sorted 1-D rows (and several k per row) in compiled loops.

    Sorted 1-D data and sorted centres make every cluster an interval between the midpoints of adjacent
    centres, so an assignment step only moves the k - 1 cluster boundaries (a binary search first, then a
    walk from the last position) and an update step is one prefix-sum lookup per cluster. Centres start
    at the (t + 1/2)/k quantiles of each row (t = 0..k-1). A clustering whose assignment stops changing
    after the first update has converged (its next update would give the same centres); the result of a
    row does not depend on the other rows. Ties between two centres go to the lower one, as in
    scikit-learn (first minimum). An emptied cluster keeps its centre (scikit-learn would move it to a
    far point instead); this only happens on rare inputs.

    Args:
        xs: (R, n) ascending float64 rows; entries at positions >= counts[r] are padding.
        counts: (R,) number of real values per row.
        n_clusters: (R,) or (R, G) k per row (G clusterings of each row), 1 <= k; rows with
            k > counts[r] get meaningless output.
        max_iter: iteration cap.
        prefix: ``prefix_sums(xs, counts)`` when already computed.

    Returns:
        (R, k_max) - or (R, G, k_max) - int64 exclusive end position of each cluster, clusters ordered by
        increasing centre; clusters t >= k are empty and end at counts[r].
    """
    xs = np.ascontiguousarray(xs, dtype=np.float64)
    counts = np.ascontiguousarray(counts, dtype=np.int64)
    ks = np.asarray(n_clusters, dtype=np.int64)
    prefix = prefix_sums(xs, counts) if prefix is None else np.ascontiguousarray(prefix, dtype=np.float64)
    ends = kmeans_rows(xs, counts, np.ascontiguousarray(ks.reshape(len(xs), -1)), max_iter, prefix)
    return ends if ks.ndim == 2 else ends[:, 0]
