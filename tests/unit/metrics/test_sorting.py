"""Shared sorting primitives against numpy stable argsort references (ties by lower index)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.metrics._inputs import stable_ranking
from vse_ray.metrics.functional._sorting import dense_ranks, sorted_order, tied_pairs, topk_indices


def _scores(dtype, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    scores = np.round(rng.normal(size=(40, 30)) * 2) / 2
    scores[0, :6] = [-0.0, 0.0, 0.0, -0.0, 1.0, -1.0]
    return scores.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [1, 3, 29, 30])
def test_topk_indices_equal_stable_argsort(dtype, k: int) -> None:
    scores = _scores(dtype)
    expected = np.stack([stable_ranking(row)[:k] for row in scores])
    np.testing.assert_array_equal(topk_indices(scores, k), expected)
    np.testing.assert_array_equal(topk_indices(scores, k, ordered=False), np.sort(expected, axis=1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("descending", [False, True])
def test_sorted_order_is_stable(dtype, descending: bool) -> None:
    scores = _scores(dtype, seed=1)
    sign = -1.0 if descending else 1.0
    expected = np.argsort(sign * scores.astype(np.float64) + 0.0, axis=1, kind="stable")
    np.testing.assert_array_equal(sorted_order(scores, descending)[0], expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dense_ranks_and_ties_against_loops(dtype) -> None:
    scores = _scores(dtype, seed=2)
    ranks, ties = dense_ranks(scores)
    for row, rank, tie in zip(scores, ranks, ties, strict=True):
        levels = np.unique(row)
        np.testing.assert_array_equal(rank, np.searchsorted(levels, row))
        assert tie == sum(int(c) * (int(c) - 1) // 2 for c in np.unique(row, return_counts=True)[1])
    np.testing.assert_array_equal(tied_pairs(np.sort(scores, axis=1)), ties)
