"""Row-wise sorting primitives shared by the metrics; every ordering breaks ties by the lower column index.

Float32 rows take a fast path: each value is mapped to an order-preserving 32-bit key and packed with its
column index into one uint64, so one SIMD ``np.sort`` yields a stable order (ties by index) without
``argsort``. Other dtypes use ``np.argsort(kind="stable")``. Both give identical orders.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import numpy as np

_LOW, _HIGH = (0, 1) if sys.byteorder == "little" else (1, 0)


def row_chunks(n_rows: int, chunk_size: int) -> Iterator[slice]:
    """Yield consecutive row slices of at most ``chunk_size`` rows."""
    for start in range(0, n_rows, chunk_size):
        yield slice(start, min(start + chunk_size, n_rows))


def float32_keys(values: np.ndarray) -> np.ndarray:
    """Order-preserving uint32 keys of float32 values; -0.0 and +0.0 share one key."""
    signed = (values + np.float32(0.0)).view(np.int32)
    keys = signed >> 31
    keys &= 0x7FFFFFFF
    keys ^= signed
    return keys.view(np.uint32) ^ np.uint32(0x80000000)


def pack_sort(high: np.ndarray, low: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sort each row of 32-bit pairs by (high, low) in one uint64 sort.

    Returns:
        ``(packed, high_sorted, low_sorted)``: the sorted uint64 keys and uint32 views of their two halves.
    """
    packed = high.astype(np.uint64, order="C")
    packed <<= np.uint64(32)
    packed |= low.astype(np.uint64, copy=False)
    packed.sort(axis=1)
    halves = packed.view(np.uint32).reshape(*packed.shape, 2)
    return packed, halves[..., _HIGH], halves[..., _LOW]


def sorted_order(values: np.ndarray, descending: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Stable row-wise sort.

    Returns:
        ``(order, keys)``: (n, m) column indices in sorted order (ties by lower index) and the values, or
        order-preserving keys, in that order; keys are equal exactly where the sorted values are equal.
    """
    if values.dtype == np.float32:
        columns = np.arange(values.shape[1], dtype=np.uint32)
        _, keys, order = pack_sort(float32_keys(-values if descending else values), columns)
        return order, keys
    order = np.argsort(-values if descending else values, axis=1, kind="stable")
    return order, np.take_along_axis(values, order, axis=1)


def tied_pairs(sorted_keys: np.ndarray) -> np.ndarray:
    """Per row of already sorted keys, the number of equal pairs: the sum over runs of c * (c - 1) / 2.

    Works on the (usually few) entries equal to their predecessor: a run of c equal keys leaves a streak
    of L = c - 1 consecutive such entries, worth L * (L + 1) / 2 pairs.
    """
    n_rows, n_cols = sorted_keys.shape
    repeats = np.zeros(sorted_keys.shape, dtype=bool)
    np.equal(sorted_keys[:, 1:], sorted_keys[:, :-1], out=repeats[:, 1:])
    flat = np.flatnonzero(repeats)
    if flat.size == 0:
        return np.zeros(n_rows, dtype=np.int64)
    streak_start = np.flatnonzero(np.diff(flat, prepend=-2) != 1)
    streak = np.diff(streak_start, append=flat.size)
    pairs = np.bincount(flat[streak_start] // n_cols, streak * (streak + 1) / 2, minlength=n_rows)
    return pairs.astype(np.int64)


def dense_ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise dense ranks (int32, 0-based, equal values share a rank) and tied-pair counts per row."""
    order, keys = sorted_order(values)
    new_run = np.ones(keys.shape, dtype=bool)
    np.not_equal(keys[:, 1:], keys[:, :-1], out=new_run[:, 1:])
    dense = np.cumsum(new_run, axis=1, dtype=np.int32)
    ranks = np.empty_like(dense)
    np.put_along_axis(ranks, order, dense - 1, axis=1)
    return ranks, tied_pairs(keys)


def topk_indices(scores: np.ndarray, k: int, ordered: bool = True) -> np.ndarray:
    """Column indices of the ``k`` highest scores per row, ties broken by the lower column index.

    ``np.partition`` finds each row's k-th largest value; rows with a tie at that value keep the
    lowest-index tied items. With ``ordered`` each row is sorted by (score descending, index ascending),
    otherwise indices come in increasing column order.
    """
    n_rows, n_cols = scores.shape
    if k == n_cols:
        return sorted_order(scores, descending=True)[0] if ordered else np.tile(np.arange(k), (n_rows, 1))
    threshold = np.partition(scores, n_cols - k, axis=1)[:, n_cols - k, None]
    keep = scores >= threshold
    tied = np.flatnonzero(np.count_nonzero(keep, axis=1) > k)
    if tied.size:
        above = scores[tied] > threshold[tied]
        at = scores[tied] == threshold[tied]
        room = k - np.count_nonzero(above, axis=1)[:, None]
        keep[tied] = above | (at & (np.cumsum(at, axis=1) <= room))
    index = np.nonzero(keep)[1].reshape(n_rows, k)
    if ordered:
        top = np.take_along_axis(scores, index, axis=1)
        index = np.take_along_axis(index, np.lexsort((index, -top), axis=1), axis=1)
    return index
