"""vse_ray's training draws against the laws of the reference code's (VSE∞'s `PrecompRegionDataset` and its
`DataLoader(shuffle=True, drop_last=True)`), and which stream feeds which draw (`vse_ray.train.streams`).

The reference draws, per training item: the caption order as one uniform permutation of all captions per
epoch (each caption once, the last partial batch dropped), and each region kept when ``np.random.rand() >
0.2``. These tests check the same laws with exact or statistical references (scipy), seeded so they repeat.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import torch
from scipy import stats

from vse_ray.data.store.split_data import ImageStore
from vse_ray.train.batches import BatchBuilder, TableBatches
from vse_ray.train.region_drop import draw_region_keep
from vse_ray.train.streams import caption_rng, region_rng, seed_step_torch

CAPTIONS_PER_IMAGE = 5


def _table(images: int) -> pa.Table:
    n = images * CAPTIONS_PER_IMAGE
    return pa.table({"caption_id": np.arange(n), "image_id": np.arange(n) // CAPTIONS_PER_IMAGE})


def _epoch_ids(batches: TableBatches, epoch: int, column: str = "caption_id") -> list[np.ndarray]:
    return [np.asarray(b[column]) for b in batches.epoch_batches(epoch)]


def test_region_drop_rate_and_kept_count_follow_the_reference_law():
    """Each of 36 regions kept with probability 0.8, independently: kept counts are Binomial(36, 0.8)."""
    keep = draw_region_keep(20_000, 36, 0.2, np.random.default_rng(0))
    assert keep.shape == (20_000, 36) and keep.dtype == bool
    rate = keep.mean()
    assert abs(rate - 0.8) < 4 * np.sqrt(0.8 * 0.2 / keep.size)
    counts = np.bincount(keep.sum(axis=1), minlength=37)
    expected = stats.binom.pmf(np.arange(37), 36, 0.8) * len(keep)
    tail = expected < 5  # pool the sparse tails (chi-square needs ≥ 5 expected per cell)
    observed = np.append(counts[~tail], counts[tail].sum())
    pooled = np.append(expected[~tail], expected[tail].sum())
    assert stats.chisquare(observed, pooled * observed.sum() / pooled.sum()).pvalue > 1e-3
    # regions independent of each other: neighbouring positions uncorrelated
    r = np.corrcoef(keep[:, :-1].ravel(), keep[:, 1:].ravel())[0, 1]
    assert abs(r) < 4 / np.sqrt(keep[:, 1:].size)


def test_region_drop_keeps_at_least_one_region():
    keep = draw_region_keep(5_000, 2, 0.9, np.random.default_rng(1))
    assert keep.any(axis=1).all()


def test_each_caption_once_per_epoch_and_the_last_partial_batch_dropped():
    """The reference sampler: every caption at most once per epoch, ⌊5N / B⌋ full batches."""
    images, batch = 103, 16
    for epoch in (1, 2, 3):
        ids = _epoch_ids(TableBatches(_table(images), batch, seed=4), epoch)
        flat = np.concatenate(ids)
        assert all(len(b) == batch for b in ids) and len(ids) == images * CAPTIONS_PER_IMAGE // batch
        assert len(np.unique(flat)) == len(flat)
        per_image = np.bincount(flat // CAPTIONS_PER_IMAGE, minlength=images)
        assert per_image.max() <= CAPTIONS_PER_IMAGE
        assert images * CAPTIONS_PER_IMAGE - len(flat) < batch


def test_images_repeat_within_a_batch_as_under_a_uniform_permutation():
    """Same-image caption pairs per batch: C(B, 2)·(5 − 1)/(5N − 1) in expectation, as for the reference."""
    images, batch, epochs = 200, 32, 200
    batches = TableBatches(_table(images), batch, seed=11)
    pairs = []
    for epoch in range(1, epochs + 1):
        for ids in _epoch_ids(batches, epoch, "image_id"):
            counts = np.bincount(ids)
            pairs.append(int((counts * (counts - 1) // 2).sum()))
    expected = batch * (batch - 1) / 2 * (CAPTIONS_PER_IMAGE - 1) / (images * CAPTIONS_PER_IMAGE - 1)
    sem = np.std(pairs) / np.sqrt(len(pairs))
    assert abs(np.mean(pairs) - expected) < 4 * sem


def _positions(batches: TableBatches, epoch: int) -> np.ndarray:
    order = np.concatenate(_epoch_ids(batches, epoch))
    pos = np.full(batches.num_rows, -1)
    pos[order] = np.arange(len(order))
    return pos


def test_epoch_orders_are_independent_across_epochs_and_seeds():
    """Spearman correlation of each caption's position between any two (seed, epoch) orders ≈ 0."""
    table = _table(400)
    orders = {(s, e): _positions(TableBatches(table, 50, seed=s), e) for s in (0, 1) for e in (1, 2)}
    keys = list(orders)
    for i, a in enumerate(keys):
        for b in keys[i + 1 :]:
            kept = (orders[a] >= 0) & (orders[b] >= 0)
            rho = stats.spearmanr(orders[a][kept], orders[b][kept]).statistic
            assert abs(rho) < 4 / np.sqrt(kept.sum()), (a, b, rho)


def test_workers_get_disjoint_captions_and_their_own_draws():
    table = _table(100)
    shards = [TableBatches(table, 10, seed=2, rank=r, world_size=2) for r in range(2)]
    mine, theirs = (np.concatenate(_epoch_ids(s, 1)) for s in shards)
    assert not set(mine) & set(theirs)
    a = draw_region_keep(64, 36, 0.2, region_rng(2, 0, 1))
    b = draw_region_keep(64, 36, 0.2, region_rng(2, 1, 1))
    assert abs(np.corrcoef(a.ravel(), b.ravel())[0, 1]) < 4 / np.sqrt(a.size)
    assert not np.array_equal(caption_rng(2, 0, 1).random(8), caption_rng(2, 1, 1).random(8))


def test_each_draw_has_its_own_stream_keyed_by_epoch():
    """Same (seed, rank, epoch): the same draws, whatever ran before (a resumed run repeats them); other
    epochs or streams: other draws."""
    first = draw_region_keep(8, 36, 0.2, region_rng(5, 0, 3))
    caption_rng(5, 0, 3).random(1000)  # the caption augmentation drawing does not move the region draws
    assert np.array_equal(first, draw_region_keep(8, 36, 0.2, region_rng(5, 0, 3)))
    assert not np.array_equal(first, draw_region_keep(8, 36, 0.2, region_rng(5, 0, 4)))
    seed_step_torch(5, 0, 3)
    step = torch.rand(16)
    torch.rand(100)
    seed_step_torch(5, 0, 3)
    assert torch.equal(step, torch.rand(16))
    seed_step_torch(5, 1, 3)
    assert not torch.equal(step, torch.rand(16))


def test_batch_builder_draws_region_masks_or_takes_a_sources():
    images = ImageStore(np.arange(4), np.random.default_rng(0).normal(size=(4, 6, 3)).astype(np.float32))
    rows = {
        "caption_id": np.arange(4),
        "image_id": np.arange(4),
        "tokens": [np.array([1, 5, 2])] * 4,
        "text": ["a"] * 4,
    }
    builder = BatchBuilder(images, None, region_drop=0.2)
    drawn = builder(rows, region_rng=region_rng(0, 0, 1)).region_keep
    assert drawn is not None and drawn.shape == (4, 6)
    expected = draw_region_keep(4, 6, 0.2, region_rng(0, 0, 1))
    assert np.array_equal(drawn.numpy(), expected)
    given = np.zeros((4, 6), dtype=bool)
    given[:, 2] = True
    replayed = builder({**rows, "region_keep": list(given)}, region_rng=region_rng(0, 0, 1)).region_keep
    assert replayed is not None and np.array_equal(replayed.numpy(), given)
    assert BatchBuilder(images, None)(rows, region_rng=region_rng(0, 0, 1)).region_keep is None
