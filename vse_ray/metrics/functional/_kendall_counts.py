"""Batched pair counts for Kendall's tau-b: an O(K^2) pair comparison and an O(K log^2 K) sort-based count.

Both return, per row, ``(con_minus_dis, x_ties, y_ties)``: concordant minus discordant pairs and the pairs
tied in x and in y, the integers ``scipy.stats.kendalltau`` derives its statistic from.
"""

from __future__ import annotations

import numpy as np

from vse_ray.metrics.functional._sorting import dense_ranks, float32_keys, pack_sort, tied_pairs

Counts = tuple[np.ndarray, np.ndarray, np.ndarray]


def pairwise_counts(x: np.ndarray, y: np.ndarray) -> Counts:
    """Counts from all K x K comparisons: concordant x_i > x_j, y_i > y_j; discordant x_i > x_j, y_i < y_j."""
    n_pairs = x.shape[1] * (x.shape[1] - 1) // 2
    x_greater = x[:, :, None] > x[:, None, :]
    y_greater = y[:, :, None] > y[:, None, :]
    concordant = np.count_nonzero(x_greater & y_greater, axis=(1, 2))
    discordant = np.count_nonzero(x_greater & y_greater.transpose(0, 2, 1), axis=(1, 2))
    x_ties = n_pairs - np.count_nonzero(x_greater, axis=(1, 2))
    y_ties = n_pairs - np.count_nonzero(y_greater, axis=(1, 2))
    return concordant - discordant, x_ties, y_ties


def sorted_counts(x: np.ndarray, y: np.ndarray) -> Counts:
    """Counts from one sort by (x, dense rank of y), then the strict inversions left in the y ranks.

    With the items ordered by x (ties by y), a pair is discordant exactly when its y values are inverted;
    ``con - dis = tot - x_ties - y_ties + joint_ties - 2 dis``, the identity scipy uses.
    """
    n_items = x.shape[1]
    rank_y, y_ties = dense_ranks(y)
    key_x = float32_keys(x) if x.dtype == np.float32 else dense_ranks(x)[0]
    joint, sorted_x, sorted_rank_y = pack_sort(key_x, rank_y)
    x_ties = tied_pairs(sorted_x)
    joint_ties = tied_pairs(joint)
    n_pairs = n_items * (n_items - 1) // 2
    return n_pairs - x_ties - y_ties + joint_ties - 2 * strict_inversions(sorted_rank_y), x_ties, y_ties


def strict_inversions(sequence: np.ndarray, base: int = 8) -> np.ndarray:
    """Per row, the number of pairs i < j with sequence[i] > sequence[j]; values must lie in [0, K).

    Rows are padded (with K) to ``s * 2**m`` entries, ``base / 2 < s <= base``. Blocks of ``s`` entries are
    counted by direct comparison. Then each key holds ``value * 2**m + block index`` and, for widths
    ``w = s, 2s, ...``, blocks of ``2w`` are sorted in place: a right-half entry at sorted position p has
    ``w - (p - r)`` larger left-half entries (r: its rank among right-half entries), so a level adds
    ``w^2 + w(w-1)/2 - sum(p)`` per block. Right-half positions are accumulated over all levels and summed
    with one matrix-vector product.
    """
    n_rows, n_items = sequence.shape
    levels = max(0, int(np.ceil(np.log2(n_items / base))))
    block = -(-n_items // 2**levels)
    width = block << levels
    keys = np.full((n_rows, width), n_items, dtype=np.int32 if (n_items + 1) << levels < 2**31 else np.int64)
    keys[:, :n_items] = sequence
    blocks = keys.reshape(n_rows, -1, block)
    in_block = np.zeros(blocks.shape[:2], dtype=np.int8)
    for i in range(block - 1):
        for j in range(i + 1, block):
            in_block += blocks[:, :, i] > blocks[:, :, j]
    inversions = in_block.sum(axis=1, dtype=np.int64)
    position = np.arange(width)
    keys <<= levels
    keys |= (position // block).astype(keys.dtype)
    right = np.zeros_like(keys)
    flags = np.empty_like(keys)
    for level in range(levels):
        half = block << level
        n_blocks = width // (2 * half)
        keys.reshape(n_rows, n_blocks, 2 * half).sort(axis=2)
        np.right_shift(keys, level, out=flags)
        flags &= 1
        right += flags
        per_block = half * half + half * (half - 1) // 2
        inversions += n_blocks * per_block + half * half * n_blocks * (n_blocks - 1)
    if levels:
        inversions -= (right.astype(np.float64) @ position.astype(np.float64)).astype(np.int64)
    return inversions
