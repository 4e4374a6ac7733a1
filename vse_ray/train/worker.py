"""`train_loop_per_worker`: the Ray Train entry of each worker — resume state, data shard, then the engine."""

from __future__ import annotations

from typing import Any

from vse_ray.checkpoint_files import load_checkpoint
from vse_ray.train.config import CheckedConfig
from vse_ray.train.epoch_loop import WorkerContext, run_training
from vse_ray.train.reporter import RayTrainReporter


def train_loop_per_worker(config: dict[str, Any]) -> None:  # pragma: no cover, runs inside Ray Train workers
    """Config key: `cfg` (CheckedConfig.to_dict()). The driver logs each reported epoch to MLflow."""
    import ray.train
    import ray.train.torch

    checked = CheckedConfig.from_dict(config["cfg"])  # checked by the driver (`build_trainer`)
    context = ray.train.get_context()
    rank = context.get_world_rank()
    start_state = None
    checkpoint = ray.train.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as directory:
            start_state = load_checkpoint(directory)
    worker = WorkerContext(
        batches=None,  # this worker's part of each global batch of a seeded permutation of the split
        device=ray.train.torch.get_device(),
        rank=rank,
        world_size=context.get_world_size(),
    )
    run_training(checked, RayTrainReporter(), start_state, worker)
