"""R^V@K, true R@K, med r, mean r and rsum against explicit per-query loops (VSE++ i2t/t2i style)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.metrics._inputs import retrieval_input, stable_ranking
from vse_ray.metrics import recall_at_k, retrieval_recall


def _reference(sims: np.ndarray, positives: np.ndarray, ks: tuple[int, ...]) -> dict[str, float]:
    first, found = [], {k: [] for k in ks}
    for row, pos in zip(sims, positives, strict=True):
        ranked = stable_ranking(row)
        ranks = [int(np.flatnonzero(ranked == j)[0]) for j in np.flatnonzero(pos)]
        first.append(min(ranks))
        for k in ks:
            found[k].append(sum(r < k for r in ranks) / len(ranks))
    out = {}
    for k in ks:
        out[f"R_at_{k}"] = 100.0 * np.mean([r < k for r in first])
        out[f"trueR_at_{k}"] = 100.0 * np.mean(found[k])
    out["medr"] = np.floor(np.median(first)) + 1
    out["meanr"] = np.mean(first) + 1
    return out


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("ks", [(1, 5, 10), (2, 12)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_both_directions_equal_loops(ties: bool, ks: tuple[int, ...], dtype) -> None:
    sims, img_of_cap, _ = retrieval_input(ties=ties, seed=2, dtype=dtype)
    truth = img_of_cap[None, :] == np.arange(sims.shape[0])[:, None]
    scores = recall_at_k(sims, img_of_cap, ks, chunk_size=5)
    for direction, matrix, mask in (("i2t", sims, truth), ("t2i", sims.T, truth.T)):
        for name, value in _reference(matrix, mask, ks).items():
            assert scores[f"{name}_{direction}"] == pytest.approx(value, abs=1e-12), (name, direction)
    assert scores["rsum"] == pytest.approx(sum(scores[f"R_at_{k}_{d}"] for k in ks for d in ("i2t", "t2i")))


def test_text_to_image_conventions_agree_and_image_to_text_differ() -> None:
    sims, img_of_cap, _ = retrieval_input(seed=8)
    scores = recall_at_k(sims, img_of_cap, (5,))
    assert scores["R_at_5_t2i"] == scores["trueR_at_5_t2i"]
    assert scores["R_at_5_i2t"] >= scores["trueR_at_5_i2t"]


def test_perfect_ranking() -> None:
    img_of_cap = np.repeat(np.arange(4), 2)
    sims = (img_of_cap[None, :] == np.arange(4)[:, None]).astype(np.float32)
    scores = recall_at_k(sims, img_of_cap, (1, 2))
    assert scores["trueR_at_2_i2t"] == scores["R_at_1_t2i"] == 100.0
    assert scores["trueR_at_1_i2t"] == 50.0 and scores["medr_i2t"] == scores["meanr_t2i"] == 1.0


@pytest.mark.parametrize(
    ("img_of_cap", "message"),
    [
        (np.array([0, 0, 1]), "img_of_cap: expected shape"),
        (np.array([0, 0, 0, 3]), "point outside"),
        (np.array([0, 0, 0, 0]), "have no caption"),
        (np.array([0.0, 1, 1, 1]), "integer"),
    ],
)
def test_bad_img_of_cap(img_of_cap: np.ndarray, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        recall_at_k(np.zeros((2, 4)), img_of_cap, (1,))


def test_query_without_positive_is_rejected() -> None:
    with pytest.raises(ValueError, match="positives: queries \\[1\\]"):
        retrieval_recall(np.zeros((2, 3)), np.array([[1, 0, 0], [0, 0, 0]]), (1,))
