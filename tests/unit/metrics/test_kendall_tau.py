"""Batched Kendall tau-b against scipy.stats.kendalltau, both counting algorithms, ties and NaN rows."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.unit.metrics._inputs import assert_same_floats, scipy_taus
from vse_ray.metrics import kendall_tau_b
from vse_ray.metrics.functional._kendall_counts import pairwise_counts, sorted_counts, strict_inversions


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


@pytest.mark.parametrize("n_items", [2, 7, 16, 40])
def test_both_algorithms_count_the_same(n_items: int) -> None:
    x, y = _rows(n_items, True, np.float64, seed=3)
    for got, want in zip(sorted_counts(x, y), pairwise_counts(x, y), strict=True):
        np.testing.assert_array_equal(got, want)


def test_constant_rows_are_nan_like_scipy() -> None:
    x = np.array([[1.0, 1.0, 1.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    y = np.array([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0], [3.0, 1.0, 2.0]])
    taus = kendall_tau_b(x, y)
    assert np.isnan(taus[:2]).all()
    assert taus[2] == pytest.approx(scipy_taus(x[2:], y[2:])[0])


def test_negative_zero_ties_with_zero() -> None:
    x = np.array([[-0.0, 0.0, 1.0, 2.0]], dtype=np.float32)
    y = np.array([[1.0, 2.0, 3.0, 4.0]], dtype=np.float32)
    assert_same_floats(kendall_tau_b(x, y), scipy_taus(x, y), atol=0.0)


def test_chunked_equals_unchunked_and_torch_input() -> None:
    x, y = _rows(300, True, np.float32, seed=5)
    full = kendall_tau_b(torch.from_numpy(x), torch.from_numpy(y))
    assert_same_floats(kendall_tau_b(x, y, chunk_size=7), full, atol=0.0)


@pytest.mark.parametrize("n_items", [1, 2, 5, 8, 9, 33, 100])
def test_strict_inversions_against_explicit_loops(n_items: int) -> None:
    rng = np.random.default_rng(n_items)
    seq = rng.integers(0, max(1, n_items // 2), (6, n_items)).astype(np.int32)
    naive = [sum(int(r[i] > r[j]) for i in range(n_items) for j in range(i + 1, n_items)) for r in seq]
    np.testing.assert_array_equal(strict_inversions(seq), naive)


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
