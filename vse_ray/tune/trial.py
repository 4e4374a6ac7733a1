"""The Tune trial function: one training run per sampled config, single-process or as a Ray Train job."""

from __future__ import annotations

import dataclasses
from typing import Any

from ray import tune

from vse_ray.tune.search_space import SearchSpace
from vse_ray.tune.space_checks import trial_config

TRIAL_MODES = ("process", "ddp")


def run_trial(
    config: dict[str, Any], *, space: SearchSpace, base: dict[str, Any], mode: str
) -> None:  # pragma: no cover, runs inside Tune trial actors (covered by the sweep integration test)
    """Train one sampled config and report every epoch to Tune.

    ``mode="process"`` runs ``vse_ray.train.engine.run_training`` in the trial's own process (resources from
    ``tune.with_resources``, fractional GPUs allowed) and resumes from the trial's last Tune checkpoint.
    ``mode="ddp"`` fits a ``TorchTrainer`` from ``build_trainer`` (Tune over Train, Ray 2.60 pattern): its
    workers report through ``TuneReportCallback`` and Train resumes from its own ``(storage_path, name)``.

    Args:
        config: the Tune sample (flat keys of ``space.param_space()``).
        space: the sweep's search space.
        base: fixed TrainConfig fields of the sweep (``data_dir``, ``epochs``, ...), already resolved.
        mode: one of ``TRIAL_MODES``.
    """
    trial_id = tune.get_context().get_trial_id()
    cfg = dataclasses.replace(
        trial_config(space, space.overrides(config), base), run_name=f"trial-{trial_id}"
    )
    if mode == "process":
        from vse_ray.tracking.checkpoint import load_checkpoint
        from vse_ray.train.engine import run_training
        from vse_ray.train.reporter import TuneReporter

        checkpoint = tune.get_checkpoint()
        start_state = None
        if checkpoint is not None:
            with checkpoint.as_directory() as directory:
                start_state = load_checkpoint(directory)
        run_training(cfg, TuneReporter(), start_state)
    else:
        from ray.tune.integration.ray_train import TuneReportCallback

        from vse_ray.train.trainer import build_trainer

        build_trainer(cfg, callbacks=[TuneReportCallback()]).fit()
