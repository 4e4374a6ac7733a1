"""Training batches: seeded, sharded, equal-size epochs; per-batch relevance built from the batch rows."""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from vse_ray.data.store.readers import load_captions, load_features
from vse_ray.data.store.split_data import ImageStore, pad_tokens
from vse_ray.relevance import CiderDocFreq, scene_similarity, tokenize
from vse_ray.relevance.cider import cider_matrix
from vse_ray.train.batches import (
    BatchBuilder,
    TableBatches,
    check_train_columns,
    cider_references,
    train_columns,
)


def _table(n: int) -> pa.Table:
    return pa.table({"caption_id": np.arange(n), "image_id": np.arange(n) // 5})


def test_epochs_are_seeded_permutations_and_shards_are_disjoint():
    shards = [TableBatches(_table(103), batch_size=10, seed=7, rank=r, world_size=2) for r in range(2)]
    ep1 = [[b["caption_id"] for b in s.epoch_batches(1)] for s in shards]
    assert [len(e) for e in ep1] == [5, 5] and all(len(b) == 10 for e in ep1 for b in e)
    seen = np.concatenate([np.concatenate(e) for e in ep1])
    assert len(np.unique(seen)) == len(seen) == 100
    again = [b["caption_id"] for b in shards[0].epoch_batches(1)]
    assert all(np.array_equal(a, b) for a, b in zip(again, ep1[0], strict=True))
    ep2 = np.concatenate([b["caption_id"] for b in shards[0].epoch_batches(2)])
    assert not np.array_equal(ep2, np.concatenate(ep1[0]))


def test_consecutive_seeds_share_no_epoch_order():
    orders = {
        (seed, epoch): tuple(
            np.concatenate([b["caption_id"] for b in TableBatches(_table(50), 10, seed).epoch_batches(epoch)])
        )
        for seed in (0, 1)
        for epoch in (1, 2)
    }
    assert orders[(0, 2)] != orders[(1, 1)] and len(set(orders.values())) == 4


@pytest.mark.parametrize("workers", [2, 3])
def test_global_batches_are_the_same_for_any_number_of_workers(workers):
    one = [set(b["caption_id"]) for b in TableBatches(_table(200), workers * 8, seed=3).epoch_batches(2)]
    shards = [TableBatches(_table(200), 8, seed=3, rank=r, world_size=workers) for r in range(workers)]
    per_step = zip(*(s.epoch_batches(2) for s in shards), strict=True)
    many = [set().union(*(set(b["caption_id"]) for b in step)) for step in per_step]
    assert many == one and len(one) == 200 // (workers * 8)


def test_batch_size_larger_than_shard_is_an_error():
    with pytest.raises(ValueError, match="batch_size 60"):
        TableBatches(_table(100), batch_size=60, seed=0, world_size=2)


def test_pad_tokens():
    tokens, lengths = pad_tokens([np.array([5, 6, 7]), np.array([8]), np.array([], dtype=np.int64)])
    assert tokens.tolist() == [[5, 6, 7], [8, 0, 0], [0, 0, 0]] and lengths.tolist() == [3, 1, 1]


def test_image_store_lookup_and_unknown_id():
    store = ImageStore(np.array([30, 10, 20]), np.arange(6, dtype=np.float32).reshape(3, 2))
    assert store.tensor(np.array([20, 30, 20])).tolist() == [[4, 5], [0, 1], [4, 5]]
    with pytest.raises(ValueError, match="image_id 11"):
        store.rows(np.array([10, 11]))


@pytest.fixture()
def train_rows(tiny_data_dir):
    table = load_captions(str(tiny_data_dir), "train")
    images = ImageStore(*load_features(str(tiny_data_dir), "train"))
    rows = {name: table[name].to_numpy(zero_copy_only=False)[::7][:12] for name in train_columns("sbert")}
    return table, images, rows


def test_sbert_relevance_is_the_cosine_of_the_batch_captions(train_rows):
    _, images, rows = train_rows
    batch = BatchBuilder(images, "sbert")(rows)
    vectors = np.stack(rows["sbert"]).astype(np.float64)
    expected = [[float(np.dot(vectors[i], vectors[j])) for j in range(12)] for i in range(12)]
    assert torch.allclose(batch.relevance.double(), torch.tensor(expected, dtype=torch.float64), atol=1e-5)
    assert batch.images.shape == (12, 32) and batch.tokens.shape[0] == 12


@pytest.mark.parametrize("subset", [1, 3])
def test_cider_relevance_uses_each_image_reference_set(tiny_data_dir, train_rows, subset):
    """Stored vectors, train document frequencies: the text kernel's values; a run on part of the captions
    (every ``subset``-th row) takes its references from that part only."""
    table, images, rows = train_rows
    table = table.take(np.arange(0, table.num_rows, subset))
    kept = np.isin(rows["caption_id"], table["caption_id"].to_numpy())
    rows = {name: col[kept] for name, col in rows.items()}
    batch = BatchBuilder(images, "cider", cider_references(table))(rows)
    texts = table["text"].to_pylist()
    owner = table["image_id"].to_numpy()
    ref_sets = [[tokenize(t) for t, o in zip(texts, owner, strict=True) if o == i] for i in rows["image_id"]]
    doc_freq = CiderDocFreq.from_dict(json.loads((tiny_data_dir / "cider_df.json").read_text()))
    expected = cider_matrix([tokenize(t) for t in rows["text"]], ref_sets, doc_freq).T
    np.testing.assert_allclose(batch.relevance.numpy(), expected, rtol=1e-6, atol=1e-6)
    assert batch.relevance.shape == (len(rows["image_id"]),) * 2 and batch.relevance.dtype == torch.float32


@pytest.mark.parametrize("source", ["sbert", "cider"])
def test_relevance_left_to_the_device_equals_the_host_matrix(train_rows, source):
    """A GPU step builds the batch relevance where `to` moves the batch (`VSE_RAY_TEST_DEVICE=cuda` runs
    this on a GPU): the same (B, B) values as the host's, and nothing left pending."""
    table, images, rows = train_rows
    builder = BatchBuilder(images, source, cider_references(table))
    device = torch.device(os.environ.get("VSE_RAY_TEST_DEVICE", "cpu"))
    deferred = builder(rows, relevance_on_device=True)
    assert deferred.relevance is None and deferred.pending is not None
    moved = deferred.to(device)
    assert moved.pending is None and moved.relevance.device.type == device.type
    torch.testing.assert_close(moved.relevance.cpu(), builder(rows).relevance, rtol=1e-6, atol=1e-6)


def test_vsepp_batches_carry_no_relevance(train_rows):
    _, images, rows = train_rows
    assert BatchBuilder(images, None)(rows).relevance is None
    with pytest.raises(ValueError, match="references"):
        BatchBuilder(images, "cider")


def test_scene_relevance_is_the_scene_similarity_of_the_batch_images(tiny_data_dir):
    table = load_captions(str(tiny_data_dir), "train", train_columns("scene"))
    images = ImageStore(*load_features(str(tiny_data_dir), "train"))
    rows = {name: table[name].to_numpy(zero_copy_only=False)[::9][:10] for name in table.column_names}
    batch = BatchBuilder(images, "scene")(rows)
    descriptors = torch.from_numpy(np.stack(rows["scene"]).astype(np.float32))
    expected = [
        [float(scene_similarity(descriptors[i : i + 1], descriptors[j : j + 1])) for j in range(10)]
        for i in range(10)
    ]
    assert torch.allclose(batch.relevance, torch.tensor(expected), atol=1e-6)
    check_train_columns(str(tiny_data_dir), "scene")


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("scene", r"split=train: no 'scene' column.*only the embedded dataset"),
        ("cider", r"split=train: no 'cider_ngrams' column.*CIDEr-D vectors: re-run it into a new folder"),
    ],
)
def test_missing_relevance_column_is_named(tmp_path, source, message):
    folder = tmp_path / "captions" / "split=train"
    folder.mkdir(parents=True)
    pq.write_table(pa.table({n: [1] for n in train_columns(None)}), folder / "part-0.parquet")
    with pytest.raises(ValueError, match=message):
        check_train_columns(str(tmp_path), source)
