"""Batched Kendall tau-b, row by row, equal to ``scipy.stats.kendalltau`` (ties and NaN cases included)."""

from __future__ import annotations

from typing import Any

import numpy as np

from vse_ray.metrics.functional._checks import as_matrix, check_same_shape
from vse_ray.metrics.functional._kendall_counts import kendall_counts
from vse_ray.metrics.functional._sorting import row_chunks

_CHUNK_ELEMENTS = 1 << 16
"""Entries per chunk by default: the chunk's uint64 sort keys (1 MiB) stay in the core's L2 cache."""


def kendall_tau_b(x: Any, y: Any, *, chunk_size: int | None = None) -> np.ndarray:
    r"""Kendall's tau-b between ``x[i]`` and ``y[i]`` for every row i, vectorised over rows.

    Ladder loss paper, eq. 13 (the Coherent Score), and BCLS paper, eq. 2:

    .. math:: \tau_b = \frac{P - Q}{\sqrt{(P + Q + T)(P + Q + U)}}

    with P concordant and Q discordant pairs, T pairs tied only in x and U pairs tied only in y.
    Computed as scipy does, ``(P - Q) / sqrt(n0 - n1) / sqrt(n0 - n2)`` with n1, n2 the pairs tied in x,
    in y, then clipped to [-1, 1]: the values equal ``scipy.stats.kendalltau(x[i], y[i]).statistic``.
    A row that is constant in x or in y (or has one item) gives NaN, as in scipy. The pair counts are
    exact integers from Knight's O(K log K) algorithm, as in scipy: two sorts and an inversion count.

    Args:
        x: (n, K) first variable per row (e.g. model similarities of a query's top-K items).
        y: (n, K) second variable per row (e.g. relevance degrees of the same items).
        chunk_size: rows per chunk; by default about 64K entries per chunk.

    Returns:
        (n,) float64 tau-b per row, NaN where undefined.

    Raises:
        ValueError: if the inputs are not finite 2-D matrices of one shape.
    """
    x = as_matrix("x", x)
    y = as_matrix("y", y)
    check_same_shape("y", y, x)
    return kendall_rows(x, y, chunk_size=chunk_size)


def kendall_rows(x: np.ndarray, y: np.ndarray, *, chunk_size: int | None = None) -> np.ndarray:
    """``kendall_tau_b`` on already checked float matrices of one shape."""
    n_rows, n_items = x.shape
    if chunk_size is None:
        chunk_size = max(1, _CHUNK_ELEMENTS // n_items)
    taus = np.empty(n_rows, dtype=np.float64)
    n_pairs = n_items * (n_items - 1) // 2
    for rows in row_chunks(n_rows, chunk_size):
        con_minus_dis, x_ties, y_ties = kendall_counts(x[rows], y[rows])
        taus[rows] = _tau_b(con_minus_dis, x_ties, y_ties, n_pairs)
    return taus


def _tau_b(con_minus_dis: np.ndarray, x_ties: np.ndarray, y_ties: np.ndarray, n_pairs: int) -> np.ndarray:
    """scipy's floating-point steps: divide by each square root in turn, clip, NaN for all-tied rows."""
    undefined = (x_ties == n_pairs) | (y_ties == n_pairs)
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = con_minus_dis.astype(np.float64) / np.sqrt((n_pairs - x_ties).astype(np.float64))
        tau = tau / np.sqrt((n_pairs - y_ties).astype(np.float64))
    tau = np.clip(tau, -1.0, 1.0)
    tau[undefined] = np.nan
    return tau
