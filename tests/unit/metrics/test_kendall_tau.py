"""Batched Kendall tau-b against scipy.stats.kendalltau and pair-by-pair counts, ties and NaN rows."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.unit.metrics._inputs import assert_same_floats, scipy_taus
from vse_ray.metrics import kendall_tau_b
from vse_ray.metrics.functional._kendall_counts import kendall_counts


def pairwise_counts(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Reference counts from all K x K comparisons: concordant x_i > x_j, y_i > y_j; discordant y_i < y_j."""
    n_pairs = x.shape[1] * (x.shape[1] - 1) // 2
    x_greater = x[:, :, None] > x[:, None, :]
    y_greater = y[:, :, None] > y[:, None, :]
    concordant = np.count_nonzero(x_greater & y_greater, axis=(1, 2))
    discordant = np.count_nonzero(x_greater & y_greater.transpose(0, 2, 1), axis=(1, 2))
    x_ties = n_pairs - np.count_nonzero(x_greater, axis=(1, 2))
    y_ties = n_pairs - np.count_nonzero(y_greater, axis=(1, 2))
    return concordant - discordant, x_ties, y_ties


def _rows(n_items: int, ties: bool, dtype, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if ties:
        return rng.integers(0, 4, (30, n_items)).astype(dtype), rng.integers(0, 3, (30, n_items)).astype(
            dtype
        )
    return rng.random((30, n_items)).astype(dtype), rng.random((30, n_items)).astype(dtype)


@pytest.mark.parametrize("n_items", [1, 2, 3, 8, 9, 24, 25, 64, 129, 1000])
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_equals_scipy(n_items: int, ties: bool, dtype) -> None:
    x, y = _rows(n_items, ties, dtype)
    expected = scipy_taus(x.astype(np.float64), y.astype(np.float64))
    assert_same_floats(kendall_tau_b(x, y), expected, atol=0.0)


@pytest.mark.parametrize("n_items", [1, 2, 7, 16, 40, 300])
@pytest.mark.parametrize(
    "dtypes", [(np.float32, np.float32), (np.float64, np.float64), (np.float32, np.float64)]
)
def test_counts_equal_pair_comparison(n_items: int, dtypes) -> None:
    x, y = _rows(n_items, True, np.float64, seed=3)
    counts = kendall_counts(x.astype(dtypes[0]), y.astype(dtypes[1]))
    for got, want in zip(counts, pairwise_counts(x, y), strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n_items", [1, 2, 3, 17, 500])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_equals_scipy_at_every_tie_density(n_items: int, dtype) -> None:
    """Rows drawn from 1 (constant), 2, 3, 10 or n_items levels, in every combination for x and y."""
    rng = np.random.default_rng(n_items)
    levels = [1, 2, 3, 10, n_items]
    pairs = [(a, b) for a in levels for b in levels]
    x = np.stack([rng.integers(0, a, n_items) * 0.25 - 1 for a, _ in pairs for _ in range(3)]).astype(dtype)
    y = np.stack([rng.integers(0, b, n_items) * 0.5 for _, b in pairs for _ in range(3)]).astype(dtype)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    assert_same_floats(kendall_tau_b(x, y), scipy_taus(x64, y64), atol=0.0)
    assert_same_floats(kendall_tau_b(x, -y), scipy_taus(x64, -y64), atol=0.0)


def test_pair_counts_beyond_int32() -> None:
    """One row of 70,000 items has 2.4e9 pairs: every count must be a 64-bit integer."""
    rng = np.random.default_rng(9)
    x = rng.integers(0, 50_000, (1, 70_000)).astype(np.float32)
    y = (x + rng.integers(0, 2_000, x.shape)).astype(np.float32)
    assert_same_floats(kendall_tau_b(x, y), scipy_taus(x, y), atol=0.0)
    con_minus_dis, x_ties, y_ties = kendall_counts(x, y)
    assert con_minus_dis[0] > 2**31 and x_ties[0] > 0 and y_ties[0] > 0


def test_constant_rows_are_nan_like_scipy() -> None:
    x = np.array([[1.0, 1.0, 1.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    y = np.array([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0], [3.0, 1.0, 2.0]])
    taus = kendall_tau_b(x, y)
    assert np.isnan(taus[:2]).all()
    assert taus[2] == pytest.approx(scipy_taus(x[2:], y[2:])[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_negative_zero_ties_with_zero(dtype) -> None:
    x = np.array([[-0.0, 0.0, 1.0, 2.0]], dtype=dtype)
    y = np.array([[1.0, 2.0, 3.0, 4.0]], dtype=dtype)
    assert_same_floats(kendall_tau_b(x, y), scipy_taus(x, y), atol=0.0)


def test_chunked_equals_unchunked_and_torch_input() -> None:
    x, y = _rows(300, True, np.float32, seed=5)
    full = kendall_tau_b(torch.from_numpy(x), torch.from_numpy(y))
    assert_same_floats(kendall_tau_b(x, y, chunk_size=7), full, atol=0.0)


@pytest.mark.parametrize("n_items", [1, 2, 5, 8, 9, 33, 100])
def test_counts_against_explicit_loops(n_items: int) -> None:
    rng = np.random.default_rng(n_items)
    x = rng.integers(0, max(1, n_items // 3), (6, n_items)).astype(np.float64)
    y = rng.integers(0, max(1, n_items // 2), (6, n_items)).astype(np.float64)
    pairs = [(i, j) for i in range(n_items) for j in range(i + 1, n_items)]
    expected = [
        (
            sum(int(np.sign(a[i] - a[j]) * np.sign(b[i] - b[j])) for i, j in pairs),
            sum(int(a[i] == a[j]) for i, j in pairs),
            sum(int(b[i] == b[j]) for i, j in pairs),
        )
        for a, b in zip(x, y, strict=True)
    ]
    np.testing.assert_array_equal(np.stack(kendall_counts(x, y), axis=1).reshape(-1, 3), expected)


@pytest.mark.parametrize(
    ("x", "y", "message"),
    [
        (np.ones(3), np.ones(3), "x: expected a non-empty 2-D"),
        (np.ones((2, 3)), np.ones((2, 4)), "y: shape"),
        (np.array([[1.0, np.nan]]), np.ones((1, 2)), "x: non-finite"),
    ],
)
def test_bad_input(x, y, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        kendall_tau_b(x, y)
