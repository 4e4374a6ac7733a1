"""Equal rows found once, so per-row work on both directions of a symmetric relevance is done once."""

from __future__ import annotations

import math

import numpy as np

from vse_ray.compiled_kernels import njit


@njit
def distinct_rows(xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the first copy of each distinct row of ``xs`` (R, n) and, per row, the copy it equals.

    Per-row results that depend on a row's values only (clusterings, relevance sorts) are computed once
    for equal rows: both directions of a symmetric relevance matrix, repeated captions. Rows are keyed by
    a weighted sum of their finite values, looked up in an open-addressing table of first copies and
    compared exactly with the rows of equal key.
    """
    n_rows, n = xs.shape
    size = 2
    while size <= 2 * n_rows:  # a power of two above twice the rows: short probe sequences
        size *= 2
    table = np.full(size, -1)  # row index of a first copy, or -1
    keys = np.zeros(n_rows)
    copy_of = np.empty(n_rows, dtype=np.int64)
    first = np.empty(n_rows, dtype=np.int64)
    n_distinct = 0
    weights = np.empty(n)
    for p in range(n):
        weights[p] = math.cos(p)  # fixed, irregular weights
    for r in range(n_rows):
        for p in range(n):
            keys[r] += weights[p] * (xs[r, p] if np.isfinite(xs[r, p]) else -1.0)
        slot = hash(keys[r]) & (size - 1)
        while table[slot] >= 0:
            other = table[slot]
            if keys[other] == keys[r] and rows_equal(xs[other], xs[r]):
                copy_of[r] = copy_of[other]
                break
            slot = (slot + 1) & (size - 1)
        else:
            table[slot] = r
            first[n_distinct], copy_of[r] = r, n_distinct
            n_distinct += 1
    return first[:n_distinct].copy(), copy_of


@njit
def rows_equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two rows hold the same values (NaN equals nothing)."""
    for p in range(a.shape[0]):
        if not a[p] == b[p]:
            return False
    return True
