"""CS@K against the ladder paper's worked examples and a scipy.stats.kendalltau loop over the top K."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.metrics._inputs import assert_same_floats, retrieval_input, scipy_taus, stable_ranking
from vse_ray.metrics import coherent_score, coherent_scores
from vse_ray.metrics.functional.coherent_score import per_query_coherent_scores


def _reference(sims: np.ndarray, relevance: np.ndarray, k: int) -> np.ndarray:
    top = [stable_ranking(row)[:k] for row in sims]
    return scipy_taus(
        np.array([s[t] for s, t in zip(sims, top, strict=True)]),
        np.array([r[t] for r, t in zip(relevance, top, strict=True)]),
    )


@pytest.mark.parametrize(
    ("ranking", "expected"),
    [("h1 h5 h4 h3 h2", -0.2), ("h1 h2 h3 h4 h5", 1.0), ("h2 h1 h3 h4 h5", 0.8), ("h1 h3 h2 h4 h5", 0.8)],
)
def test_ladder_paper_worked_examples(ranking: str, expected: float) -> None:
    """Sec. III-D: ideal order h1..h5; the listed real rankings give CS@5 = -0.2, 1.0, 0.8 and 0.8."""
    relevance = np.array([[5.0, 4.0, 3.0, 2.0, 1.0]])
    sims = np.zeros((1, 5))
    for position, name in enumerate(ranking.split()):
        sims[0, int(name[1]) - 1] = 5 - position
    assert coherent_score(sims, relevance, 5) == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize("k", [2, 5, 17, 36])
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_per_query_taus_equal_scipy(k: int, ties: bool, dtype) -> None:
    sims, _, relevance = retrieval_input(ties=ties, dtype=dtype)
    taus = coherent_score(sims, relevance, k, reduce=False)
    assert_same_floats(taus, _reference(sims.astype(np.float64), relevance.astype(np.float64), k), atol=0.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_whole_gallery_among_cutoffs_equals_scipy(dtype) -> None:
    """K = n_gallery skips the top-K selection; the other cut-offs still slice the ordered top max(K)."""
    sims, _, relevance = retrieval_input(ties=True, seed=7, dtype=dtype)
    taus = per_query_coherent_scores(sims, relevance, (36, 2, 17), chunk_size=5)
    for k, values in taus.items():
        expected = _reference(sims.astype(np.float64), relevance.astype(np.float64), k)
        assert_same_floats(values, expected, atol=0.0)


def test_mean_skips_undefined_queries() -> None:
    sims = np.array([[3.0, 2.0, 1.0, 0.0], [3.0, 2.0, 1.0, 0.0], [0.0, 1.0, 2.0, 3.0]])
    relevance = np.array([[0.5, 0.5, 0.5, 0.1], [1.0, 0.0, 0.5, 0.0], [1.0, 0.0, 0.5, 0.0]])
    taus = coherent_score(sims, relevance, 3, reduce=False)
    assert np.isnan(taus[0]) and not np.isnan(taus[1:]).any()
    assert coherent_score(sims, relevance, 3) == pytest.approx(np.mean(taus[1:]))
    assert np.isnan(coherent_score(sims, relevance, 1))


def test_whole_gallery_and_chunking() -> None:
    sims, _, relevance = retrieval_input(ties=True, seed=4)
    whole = coherent_score(sims, relevance, None, reduce=False)
    assert_same_floats(whole, coherent_score(sims, relevance, sims.shape[1], reduce=False), atol=0.0)
    assert_same_floats(
        coherent_score(sims, relevance, 7, chunk_size=5, reduce=False),
        coherent_score(sims, relevance, 7, reduce=False),
        atol=0.0,
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"k": 0}, "k: expected"), ({"k": 99}, "k: expected"), ({"k": 3, "chunk_size": 0}, "chunk_size")],
)
def test_bad_arguments(kwargs: dict, message: str) -> None:
    sims, _, relevance = retrieval_input()
    with pytest.raises(ValueError, match=message):
        coherent_score(sims, relevance, **kwargs)


def test_several_cutoffs_equal_single_calls() -> None:
    sims, _, relevance = retrieval_input(ties=True, seed=12)
    many = coherent_scores(sims, relevance, (3, 10, 36), chunk_size=5)
    assert many == {k: coherent_score(sims, relevance, k) for k in (3, 10, 36)}
