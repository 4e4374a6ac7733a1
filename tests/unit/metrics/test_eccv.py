"""mAP@R, R-Precision and R@1 against eccv_caption's own functions, and full mAP against scikit-learn."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.metrics import average_precision_score

from tests.unit.metrics._inputs import retrieval_input, stable_ranking
from vse_ray.metrics import average_precision, evaluate_all, map_at_r, r_precision, retrieval_recall

with warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)  # eccv_caption warns when the optional ujson is missing
    from eccv_caption._metrics import compute_eccv_metrics


def _positives(shape: tuple[int, int], seed: int, empty_rows: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    mask = rng.random(shape) < 0.15
    mask[np.arange(shape[0]), rng.integers(0, shape[1], shape[0])] = True
    mask[:empty_rows] = False
    return mask


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("empty_rows", [0, 3])
@pytest.mark.parametrize("transpose", [False, True])
def test_equals_eccv_caption(ties: bool, empty_rows: int, transpose: bool) -> None:
    sims = retrieval_input(ties=ties, seed=1).sims
    sims = sims.T if transpose else sims
    positives = _positives(sims.shape, seed=2, empty_rows=empty_rows)
    kept = [q for q in range(sims.shape[0]) if positives[q].any()]
    expected = compute_eccv_metrics(
        {q: stable_ranking(sims[q]).tolist() for q in range(sims.shape[0])},
        {q: np.flatnonzero(positives[q]).tolist() for q in kept},
    )
    assert map_at_r(sims, positives, chunk_size=4) == pytest.approx(expected["eccv_map_at_r"], abs=1e-12)
    assert r_precision(sims, positives, chunk_size=4) == pytest.approx(expected["eccv_rprecision"], abs=1e-12)
    r1 = retrieval_recall(sims[kept], positives[kept], (1,))["R_at_1"]
    assert r1 == pytest.approx(100.0 * expected["eccv_r1"], abs=1e-10)


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_average_precision_equals_sklearn(ties: bool, dtype) -> None:
    sims, _, relevance = retrieval_input(ties=ties, seed=6, dtype=dtype)
    positives = relevance >= 0.5
    positives[0] = False
    expected = np.mean([average_precision_score(p, s) for p, s in zip(positives[1:], sims[1:], strict=True)])
    assert average_precision(sims, positives, chunk_size=5) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("metric", [map_at_r, r_precision, average_precision])
def test_no_positive_at_all_is_rejected(metric) -> None:
    with pytest.raises(ValueError, match="positives: no query has a positive"):
        metric(np.zeros((2, 3)), np.zeros((2, 3), dtype=bool))


def test_mask_must_be_binary() -> None:
    with pytest.raises(ValueError, match="positives: a binary mask"):
        map_at_r(np.zeros((2, 3)), np.full((2, 3), 2))


@pytest.mark.parametrize("ties", [False, True])
def test_evaluate_all_skips_queries_outside_the_eccv_subset(ties: bool) -> None:
    """All-False rows (queries outside ECCV Caption) in both directions: no error, eccv_caption's values."""
    sims, img_of_cap, _ = retrieval_input(ties=ties, seed=4)
    masks = {"i2t": _positives(sims.shape, seed=5, empty_rows=3), "t2i": _positives(sims.T.shape, 6, 7)}
    scores = evaluate_all(sims, img_of_cap, eccv_positives=masks, chunk_size=5)
    for d, s in (("i2t", sims), ("t2i", sims.T)):
        kept = [q for q in range(s.shape[0]) if masks[d][q].any()]
        expected = compute_eccv_metrics(
            {q: stable_ranking(s[q]).tolist() for q in range(s.shape[0])},
            {q: np.flatnonzero(masks[d][q]).tolist() for q in kept},
        )
        assert scores[f"ECCV_R_at_1_{d}"] == pytest.approx(100.0 * expected["eccv_r1"], abs=1e-10)
        assert scores[f"ECCV_mAP_at_R_{d}"] == pytest.approx(expected["eccv_map_at_r"], abs=1e-12)
        assert scores[f"ECCV_R_P_{d}"] == pytest.approx(expected["eccv_rprecision"], abs=1e-12)


def test_retrieval_recall_skips_empty_queries_only_when_asked() -> None:
    sims = retrieval_input(seed=2).sims
    positives = _positives(sims.shape, seed=3, empty_rows=2)
    with pytest.raises(ValueError, match=r"queries \[0, 1\] have no positive"):
        retrieval_recall(sims, positives)
    skipped = retrieval_recall(sims, positives, skip_empty=True)
    assert skipped == retrieval_recall(sims[2:], positives[2:])
    with pytest.raises(ValueError, match="no query has a positive"):
        retrieval_recall(sims, np.zeros_like(positives), skip_empty=True)
