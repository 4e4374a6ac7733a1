"""Shared inputs and naive references for the metric tests."""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
import scipy.stats


class RetrievalInput(NamedTuple):
    """An image->text problem: similarities, caption owners and a graded relevance, all (n_img, n_cap)."""

    sims: np.ndarray
    img_of_cap: np.ndarray
    relevance: np.ndarray


def retrieval_input(
    n_images: int = 12, per_image: int = 3, *, ties: bool = False, seed: int = 0, dtype=np.float64
) -> RetrievalInput:
    """Random problem; ``ties`` rounds scores and relevance to a few levels so many values are equal."""
    rng = np.random.default_rng(seed)
    img_of_cap = np.repeat(np.arange(n_images), per_image)
    sims = rng.normal(size=(n_images, n_images * per_image))
    relevance = rng.random((n_images, n_images * per_image))
    if ties:
        sims, relevance = np.round(sims * 2) / 2, np.round(relevance * 4) / 4
    return RetrievalInput(sims.astype(dtype), img_of_cap, relevance.astype(dtype))


def stable_ranking(scores: np.ndarray) -> np.ndarray:
    """Indices by score descending, ties by lower index (the metrics' convention)."""
    return np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")


def scipy_taus(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """scipy.stats.kendalltau row by row (NaN where scipy says so)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return np.array(
            [scipy.stats.kendalltau(a, b).statistic for a, b in zip(x, y, strict=True)], dtype=np.float64
        )


def assert_same_floats(actual: np.ndarray, expected: np.ndarray, atol: float = 1e-12) -> None:
    """Equal NaN positions and values within ``atol`` elsewhere."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected))
    np.testing.assert_allclose(actual[~np.isnan(actual)], expected[~np.isnan(expected)], rtol=0, atol=atol)
