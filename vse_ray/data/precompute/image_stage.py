"""Stage 1a: images → ``features/`` (read → decode/resize → CNN actor pool → shards) or given features.

Pooled features and pixels go to Parquet; region features (3-D precomp arrays, CNN grids) to Arrow IPC
files that training reads by row (see :mod:`vse_ray.data.store.schema`).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import ray
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from vse_ray.data.precompute.config import ExecutionOptions, PrecomputeConfig
from vse_ray.data.precompute.ray_stages import (
    dataset_of_shards,
    map_in_actor_pool,
    on_node,
    pool_placement,
    write_shards,
)
from vse_ray.data.precompute.resources import TASK_CPUS, StageResources, plan_resources
from vse_ray.data.sources.image_io import FileImages, SyntheticImages, load_images
from vse_ray.data.sources.precomp import read_precomp_rows
from vse_ray.data.sources.source import Source
from vse_ray.data.store.schema import features_table
from vse_ray.data.store.shards import ShardLedger, plan_shards, shard_input
from vse_ray.features import CNNFeatureExtractor


def run_image_stage(source: Source, config: PrecomputeConfig, options: ExecutionOptions, out: Path) -> int:
    """Write the ``features/`` shards that are not complete yet; returns the number of images processed.

    File and synthetic images go through decode tasks, the CNN actor pool (``num_gpus=1`` per actor when the
    cluster has GPUs) and write tasks; precomp features through read and write tasks.
    """
    ledger = ShardLedger(out, "features")
    todo = [
        shard
        for split, data in source.splits.items()
        for shard in ledger.pending(plan_shards(split, len(data.image_ids), config.shard_size))
    ]
    if not todo:
        return 0
    blocks = [
        shard_input(s, {"image_id": source.splits[s.split].image_ids, "ref": source.splits[s.split].refs})
        for s in todo
    ]
    ds = dataset_of_shards(blocks)
    file_format = "arrow" if has_regions(source, config) else "parquet"
    if source.features is not None:
        precomp = {"features": source.features}
        # ray's stub takes a one-argument fn; fn_kwargs gives the rest
        ds = ds.map_batches(read_precomp_rows, fn_kwargs=precomp, batch_size=None, num_cpus=TASK_CPUS)  # type: ignore[arg-type]
        to_table = partial(features_table, with_image=False, dtype=config.feature_dtype)
        return write_shards(ds, ledger, todo, to_table, file_format)
    if source.images is None:
        raise ValueError("precompute: the source has neither images nor features")
    res = plan_resources(options.cnn_actors, "cnn_actors", len(todo))
    with pool_placement(res) as placement:
        ds = _cnn_features(ds, source.images, config, options, res, placement)
        to_table = partial(features_table, with_image=bool(config.keep_images), dtype=config.feature_dtype)
        return write_shards(ds, ledger, todo, to_table, file_format)


def has_regions(source: Source, config: PrecomputeConfig) -> bool:
    """Whether the features keep a region axis: 3-D precomp arrays, or CNN grids."""
    if source.features is not None:
        return np.load(next(iter(source.features.values())).path, mmap_mode="r").ndim == 3
    return config.grid


def _cnn_features(
    ds: ray.data.Dataset,
    images: FileImages | SyntheticImages,
    config: PrecomputeConfig,
    options: ExecutionOptions,
    res: StageResources,
    placement: PlacementGroupSchedulingStrategy,
) -> ray.data.Dataset:
    ds = ds.map_batches(
        on_node,  # type: ignore[arg-type]  # ray's stub takes a one-argument fn; fn_kwargs gives the rest
        fn_kwargs={
            "fn": load_images,
            "stage": "read",
            "source": images,
            "size": config.resize,
            "keep_png": bool(config.keep_images),
            "resize_mode": config.resize_mode,
        },
        batch_size=None,
        num_cpus=TASK_CPUS,
    )
    kwargs = {"cnn": config.cnn, "weights": config.weights, "crop": config.crop, "ten_crop": config.ten_crop}
    kwargs.update(init_seed=config.init_seed, batch_size=options.cnn_batch_size, grid=config.grid)
    return map_in_actor_pool(ds, CNNFeatureExtractor, kwargs, res, placement)
