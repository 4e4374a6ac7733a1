"""Per-row pair counts for Kendall's tau-b by Knight's O(K log K) algorithm, the one scipy uses.

``kendall_counts`` returns, per row, ``(con_minus_dis, x_ties, y_ties)``: concordant minus discordant pairs
and the pairs tied in x and in y (P - Q and the ties behind T and U in ladder paper eq. 13), the integers
``scipy.stats.kendalltau`` derives its statistic from.
"""

from __future__ import annotations

import numpy as np

from vse_ray.compiled_kernels import njit
from vse_ray.metrics.functional._sorting import dense_ranks, float32_keys, pack_sort

Counts = tuple[np.ndarray, np.ndarray, np.ndarray]

_HALF = np.uint64(32)


def kendall_counts(x: np.ndarray, y: np.ndarray) -> Counts:
    """Counts for each row of two float matrices of one shape.

    Every value becomes a 32-bit order key, equal exactly where the values are equal. One uint64 sort per
    row orders the items by (x, y); a second one, of (y key, position in that order), gives the y ranks.
    """
    joint = pack_sort(_order_keys(x), _order_keys(y))[0]
    by_y = joint << _HALF
    by_y |= np.arange(x.shape[1], dtype=np.uint64)
    by_y.sort(axis=1)
    return _knight_counts(joint, by_y)


def _order_keys(values: np.ndarray) -> np.ndarray:
    """Order-preserving 32-bit keys: the float32 bit pattern remapped, or the dense rank of other floats."""
    return float32_keys(values) if values.dtype == np.float32 else dense_ranks(values)[0]


@njit
def _knight_counts(joint: np.ndarray, by_y: np.ndarray) -> Counts:
    """Knight's counts from rows of sorted ``x key << 32 | y key`` and ``y key << 32 | position``.

    With the items ordered by x (ties by y), a pair is discordant exactly when its y values are inverted;
    ``con - dis = n_pairs - x_ties - y_ties + joint_ties - 2 dis``, the identity scipy uses.
    """
    n_rows, n_items = joint.shape
    n_pairs = n_items * (n_items - 1) // 2
    con_minus_dis = np.empty(n_rows, dtype=np.int64)
    x_ties = np.empty(n_rows, dtype=np.int64)
    y_ties = np.empty(n_rows, dtype=np.int64)
    rank = np.empty(n_items, dtype=np.int64)
    tree = np.empty(n_items + 1, dtype=np.int32)
    for row in range(n_rows):
        x_ties[row] = _tied_pairs(joint[row], _HALF)
        y_ties[row] = _tied_pairs(by_y[row], _HALF)
        n_ranks = _y_ranks(by_y[row], rank)
        discordant = _inversions(rank, tree[: n_ranks + 1])
        joint_ties = _tied_pairs(joint[row], np.uint64(0))
        con_minus_dis[row] = n_pairs - x_ties[row] - y_ties[row] + joint_ties - 2 * discordant
    return con_minus_dis, x_ties, y_ties


@njit
def _tied_pairs(sorted_keys: np.ndarray, shift: np.uint64) -> int:
    """Equal pairs among ``sorted_keys >> shift``: each entry equal to its predecessor adds its run length."""
    pairs = 0
    run = 0
    for i in range(1, sorted_keys.size):
        if sorted_keys[i] >> shift == sorted_keys[i - 1] >> shift:
            run += 1
            pairs += run
        else:
            run = 0
    return pairs


@njit
def _y_ranks(by_y: np.ndarray, rank: np.ndarray) -> int:
    """Write the dense 1-based y rank of the item at each position of the (x, y) order; return the top one."""
    current = 1
    for i in range(by_y.size):
        if i > 0 and by_y[i] >> _HALF != by_y[i - 1] >> _HALF:
            current += 1
        rank[by_y[i] & np.uint64(0xFFFFFFFF)] = current
    return current


@njit
def _inversions(rank: np.ndarray, tree: np.ndarray) -> int:
    """Pairs i < j with rank[i] > rank[j], from a Fenwick tree counting the ranks (< tree.size) seen."""
    tree[:] = 0
    inversions = 0
    for seen in range(rank.size):
        node = rank[seen]
        not_greater = 0
        while node > 0:
            not_greater += tree[node]
            node -= node & -node
        inversions += seen - not_greater
        node = rank[seen]
        while node < tree.size:
            tree[node] += 1
            node += node & -node
    return inversions
