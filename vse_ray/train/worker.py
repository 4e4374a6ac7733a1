"""`train_loop_per_worker`: the Ray Train entry of each worker — resume state, data shard, then the engine."""

from __future__ import annotations

from functools import partial
from typing import Any

from vse_ray.checkpoint_files import load_checkpoint
from vse_ray.tracking.recorder import log_epoch_metrics
from vse_ray.train.config import CheckedConfig
from vse_ray.train.epoch_loop import WorkerContext, run_training
from vse_ray.train.reporter import RayTrainReporter


def train_loop_per_worker(config: dict[str, Any]) -> None:  # pragma: no cover, runs inside Ray Train workers
    """Config keys: `cfg` (CheckedConfig.to_dict()), `mlflow_run_id` (rank 0 logs each epoch live) or None."""
    import ray.train
    import ray.train.torch

    checked = CheckedConfig.from_dict(config["cfg"])  # checked by the driver (`build_trainer`)
    cfg = checked.config
    context = ray.train.get_context()
    rank = context.get_world_rank()
    start_state = None
    checkpoint = ray.train.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as directory:
            start_state = load_checkpoint(directory)
    run_id = config.get("mlflow_run_id")
    logger = (
        partial(log_epoch_metrics, run_id=run_id, tracking_uri=cfg.tracking_uri)
        if run_id and rank == 0
        else None
    )
    worker = WorkerContext(
        batches=None,  # this worker's part of each global batch of a seeded permutation of the split
        device=ray.train.torch.get_device(),
        rank=rank,
        world_size=context.get_world_size(),
    )
    run_training(checked, RayTrainReporter(logger), start_state, worker)
