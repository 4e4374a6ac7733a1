"""Batched Lloyd K-Means on sorted 1-D rows: clusters are contiguous intervals of each sorted row."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


def prefix_sums(xs: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(R, n + 1) running sums of each sorted row's first ``counts[r]`` values (padding counts as 0)."""
    valid = np.arange(xs.shape[-1]) < counts[:, None]
    prefix = np.zeros((xs.shape[0], xs.shape[1] + 1))
    np.cumsum(np.where(valid, xs, 0.0), axis=-1, out=prefix[:, 1:])
    return prefix


def row_search_keys(xs: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Flat ascending keys fl(x + c_r) of all rows and the shifts c_r: one ``searchsorted`` serves all rows.

    Row r is shifted to [r w, r w + span] (w a power of two >= 4 span) and its padding to r w + w / 2, so
    the flattened rows are sorted and disjoint. Rounding x + c_r is monotone in x: a query m keyed alike
    counts every x <= m and at most some x > m whose key rounds onto the query's; callers remove those.
    """
    n_rows, n = xs.shape
    filled = counts > 0
    lo = xs[filled, 0].min(initial=0.0)
    hi = xs[filled, counts[filled] - 1].max(initial=0.0)
    width = 4.0 * 2.0 ** np.frexp(hi - lo)[1] if hi > lo else 4.0
    origin = width * np.arange(n_rows)
    shift = origin - lo
    valid = np.arange(n) < counts[:, None]
    keys = np.where(valid, xs + shift[:, None], (origin + width / 2)[:, None])
    return keys.ravel(), shift


def kmeans_1d_sorted(
    xs: ArrayLike,
    counts: ArrayLike,
    n_clusters: ArrayLike,
    max_iter: int = 100,
    prefix: np.ndarray | None = None,
) -> np.ndarray:
    """Lloyd's algorithm for k-means, run on many 1-D rows (and several k per row) at once, in numpy.

    Sorted 1-D data and sorted centres make every cluster an interval between the midpoints of adjacent
    centres, so an assignment step is one ``searchsorted`` for all rows (on ``row_search_keys``, then an
    exact check against the values) and an update step one prefix-sum lookup: O(k log n) per row and
    iteration. Centres start at the (t + 1/2)/k quantiles of each row (t = 0..k-1). A clustering whose
    assignment stops changing after the first update has converged (its next update would give the same
    centres) and leaves the batch; the rest iterate on. Ties between two centres go to the lower one, as in
    scikit-learn (first minimum). An emptied cluster keeps its centre (scikit-learn would move it to a far
    point instead); this only happens on rare inputs.

    Args:
        xs: (R, n) ascending float64 rows; entries at positions >= counts[r] are padding and must be +inf.
        counts: (R,) number of real values per row.
        n_clusters: (R,) or (R, G) k per row (G clusterings of each row), 1 <= k; rows with
            k > counts[r] get meaningless output.
        max_iter: iteration cap.
        prefix: ``prefix_sums(xs, counts)`` when already computed.

    Returns:
        (R, k_max) - or (R, G, k_max) - int64 exclusive end position of each cluster, clusters ordered by
        increasing centre; clusters t >= k are empty and end at counts[r].
    """
    xs, counts, ks = np.asarray(xs, dtype=np.float64), np.asarray(counts), np.asarray(n_clusters)
    n_rows, n = xs.shape
    ks_by_group = ks.reshape(n_rows, -1).T  # clusterings are numbered group-major: rows ascend per group
    n_groups, k_max = ks_by_group.shape[0], int(ks.max())
    k = ks_by_group.ravel()
    rows = np.tile(np.arange(n_rows), n_groups)
    last = counts[rows]
    ts = np.arange(k_max)[:, None]
    keys, shift = row_search_keys(xs, counts)
    flat_xs = xs.ravel()
    flat_prefix = (prefix_sums(xs, counts) if prefix is None else prefix).ravel()
    # per clustering (columns): centres, key shift; bounds in flat prefix coordinates, row, row start, cap
    floats = np.empty((k_max + 1, len(k)))
    floats[:k_max] = np.where(ts >= k, np.inf, xs[rows, np.minimum((2 * ts + 1) * last // (2 * k), n - 1)])
    floats[k_max] = shift[rows]
    ints = np.empty((k_max + 4, len(k)), dtype=np.int64)
    prefix_row = rows * (n + 1)
    ints[0], ints[1 : k_max + 1] = prefix_row, prefix_row + last
    ints[k_max + 1], ints[k_max + 2], ints[k_max + 3] = rows, rows * n, prefix_row + last
    bounds_out = ints[: k_max + 1].copy()
    active = np.arange(len(k))
    for step in range(max_iter):
        centres, bounds = floats[:k_max], ints[: k_max + 1]
        mid = centres[:-1] + centres[1:]
        mid /= 2
        found = keys.searchsorted(mid + floats[k_max], side="right")
        over = flat_xs.take(found - 1) > mid  # keys that rounded onto the query's: values above it
        while over.any():
            found -= over
            over = (flat_xs.take(found - 1) > mid) & (found > ints[k_max + 2])
        inner = np.minimum(found + ints[k_max + 1], ints[k_max + 3])  # in flat prefix coordinates
        changed = (inner != bounds[1:-1]).any(0)
        n_changed = np.count_nonzero(changed)
        if n_changed == 0:
            break
        if step > 0 and n_changed <= 0.8 * len(active):  # the initial centres are no means: no exit at 0
            bounds_out[:, active] = bounds
            active, inner = active[changed], inner[:, changed]
            ints, floats = ints[:, changed], floats[:, changed]
            centres, bounds = floats[:k_max], ints[: k_max + 1]
        bounds[1:-1] = inner
        sizes = bounds[1:] - bounds[:-1]
        at = flat_prefix.take(bounds)
        np.divide(at[1:] - at[:-1], sizes, out=centres, where=sizes > 0)
    bounds_out[:, active] = ints[: k_max + 1]
    ends = (bounds_out[1:] - bounds_out[0]).reshape(k_max, n_groups, n_rows).transpose(2, 1, 0)
    return ends if ks.ndim == 2 else ends[:, 0]
