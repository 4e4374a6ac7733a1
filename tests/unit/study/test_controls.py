"""The shuffled-relevance control keeps the multiset of relevance values; the train-size subset is nested."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import torch

from vse_ray.relevance import batch_relevance
from vse_ray.train.config import TrainConfig
from vse_ray.train.train_captions import first_images, select_train_captions, shuffled_relevance


def _table(n_images: int = 12, per_image: int = 5, dim: int = 8) -> pa.Table:
    rng = np.random.default_rng(3)
    n = n_images * per_image
    vectors = rng.normal(size=(n, dim)).astype(np.float32)
    return pa.table(
        {
            "caption_id": np.arange(n, dtype=np.int64),
            "image_id": np.repeat(np.arange(n_images, dtype=np.int64) * 7, per_image),
            "sbert": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), dim),
        }
    )


def _vectors(table: pa.Table) -> np.ndarray:
    return np.stack(table["sbert"].to_numpy(zero_copy_only=False)).astype(np.float32)


def test_shuffle_keeps_the_multiset_of_vectors_and_relevance_values():
    table = _table()
    shuffled = shuffled_relevance(table, "sbert", seed=0)
    before, after = _vectors(table), _vectors(shuffled)
    assert not np.array_equal(before, after)  # the vectors moved to other captions
    assert sorted(map(tuple, before)) == sorted(map(tuple, after))  # ... and are the same set
    assert shuffled["caption_id"].equals(table["caption_id"]) and shuffled["image_id"].equals(
        table["image_id"]
    )
    full = batch_relevance("sbert", torch.from_numpy(before)).numpy()
    permuted = batch_relevance("sbert", torch.from_numpy(after)).numpy()
    np.testing.assert_allclose(np.sort(full, axis=None), np.sort(permuted, axis=None), atol=1e-6)
    assert not np.allclose(full, permuted)
    assert np.array_equal(_vectors(shuffled_relevance(table, "sbert", seed=0)), after)  # seeded


def test_select_applies_subset_then_shuffle_and_refuses_non_vector_sources():
    table = _table()
    cfg = TrainConfig(data_dir="x", loss="ladder", train_images=4, shuffle_relevance=True, seed=1)
    picked = select_train_captions(table, cfg, "sbert")
    assert sorted(set(picked["image_id"].to_pylist())) == [0, 7, 14, 21] and picked.num_rows == 20
    assert sorted(map(tuple, _vectors(picked))) == sorted(map(tuple, _vectors(first_images(table, 4))))
    with pytest.raises(
        ValueError, match="shuffle_relevance: needs a loss whose relevance is a caption vector"
    ):
        select_train_captions(table, cfg, "cider")
    with pytest.raises(ValueError, match="train_images: 13 requested, the train split has 12 images"):
        first_images(table, 13)
    assert first_images(table, 0) is table
