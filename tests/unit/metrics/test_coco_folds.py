"""COCO 1K folds: consecutive image blocks with their captions, re-indexed, averaged key by key."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.metrics._inputs import retrieval_input
from vse_ray.metrics import coco_1k_folds, mean_over_folds, recall_at_k


def test_folds_cover_images_and_their_captions() -> None:
    sims, img_of_cap, relevance = retrieval_input(n_images=10, per_image=2, seed=1)
    folds = list(coco_1k_folds(sims, img_of_cap, {"cider": relevance}, n_folds=5))
    assert len(folds) == 5
    for fold, (fold_sims, fold_index, fold_relevance) in enumerate(folds):
        images = np.arange(2 * fold, 2 * fold + 2)
        captions = np.flatnonzero(np.isin(img_of_cap, images))
        np.testing.assert_array_equal(fold_sims, sims[np.ix_(images, captions)])
        np.testing.assert_array_equal(fold_index, img_of_cap[captions] - 2 * fold)
        np.testing.assert_array_equal(fold_relevance["cider"], relevance[np.ix_(images, captions)])


def test_mean_over_folds_averages_each_key() -> None:
    sims, img_of_cap, _ = retrieval_input(n_images=10, per_image=2, seed=1)
    per_fold = [recall_at_k(s, i, (1,)) for s, i, _ in coco_1k_folds(sims, img_of_cap, n_folds=2)]
    mean = mean_over_folds(per_fold)
    assert mean["R_at_1_i2t"] == pytest.approx((per_fold[0]["R_at_1_i2t"] + per_fold[1]["R_at_1_i2t"]) / 2)
    assert mean_over_folds([{"a": float("nan")}, {"a": 2.0}]) == {"a": 2.0}


def test_folds_must_split_evenly() -> None:
    sims, img_of_cap, _ = retrieval_input(n_images=10, per_image=2)
    with pytest.raises(ValueError, match="n_folds"):
        next(coco_1k_folds(sims, img_of_cap, n_folds=3))
    with pytest.raises(ValueError, match="relevance\\['cider'\\]"):
        next(coco_1k_folds(sims, img_of_cap, {"cider": np.zeros((2, 2))}))
