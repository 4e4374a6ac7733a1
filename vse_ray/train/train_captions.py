"""The train captions one run uses: an optional subset of the images, and the shuffled-relevance control."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from vse_ray.relevance.sources import SHUFFLED_SOURCES, SOURCES
from vse_ray.train.config import TrainConfig


def first_images(table: pa.Table, n_images: int) -> pa.Table:
    """The captions of the ``n_images`` smallest image ids (all rows when 0): nested subsets as n grows."""
    if n_images == 0:
        return table
    ids = np.unique(table["image_id"].to_numpy())
    if n_images > len(ids):
        raise ValueError(f"train_images: {n_images} requested, the train split has {len(ids)} images")
    return table.filter(pa.array(np.isin(table["image_id"].to_numpy(), ids[:n_images])))


def image_fraction(table: pa.Table, fraction: float, seed: int) -> pa.Table:
    """The captions of round(`fraction` × images) images drawn uniformly without replacement (seeded); all
    rows when `fraction` is 1. SAM's low-data rows (Table 2) train on 10 % and 25 % of the images."""
    if fraction >= 1:
        return table
    image_ids = table["image_id"].to_numpy()
    ids = np.unique(image_ids)
    count = max(1, round(fraction * len(ids)))
    chosen = np.random.default_rng(seed).choice(ids, size=count, replace=False)
    return table.filter(pa.array(np.isin(image_ids, chosen)))


def shuffled_relevance(table: pa.Table, column: str, seed: int) -> pa.Table:
    """``table`` with the rows of relevance ``column`` permuted across captions (seeded).

    The control of the study protocol: every caption keeps a relevance vector from the same set, so the batch
    relevance keeps its distribution (the multiset of vectors is unchanged) but no longer says which captions
    describe similar scenes.
    """
    perm = np.random.default_rng(seed).permutation(table.num_rows)
    index = table.column_names.index(column)
    return table.set_column(index, column, table[column].take(pa.array(perm)))


def select_train_captions(table: pa.Table, cfg: TrainConfig, relevance_source: str | None) -> pa.Table:
    """Apply ``cfg.train_images``, ``cfg.train_fraction`` and ``cfg.shuffle_relevance`` to the train captions
    of a run."""
    table = image_fraction(first_images(table, cfg.train_images), cfg.train_fraction, cfg.seed)
    if not cfg.shuffle_relevance:
        return table
    if relevance_source not in SHUFFLED_SOURCES:
        raise ValueError(
            "shuffle_relevance: needs a loss whose relevance is a caption vector "
            f"{sorted(SHUFFLED_SOURCES)}; "
            f"loss '{cfg.loss}' uses {relevance_source!r}"
        )
    return shuffled_relevance(table, str(SOURCES[relevance_source].vector_column), cfg.seed)
