"""The Tune trial functions: one training run per trial, single-process or as a Ray Train job."""

from __future__ import annotations

from typing import Any

from ray import tune

from vse_ray.train.config import CheckedConfig, TrainConfig
from vse_ray.tune.search_space import SearchSpace
from vse_ray.tune.space_checks import trial_config

NAMED_TRIAL_KEY = "run"  # the one Tune key of a grid of named configs (`named_grid`)


def run_trial(
    config: dict[str, Any], *, space: SearchSpace, base: dict[str, Any], mode: str
) -> None:  # pragma: no cover, runs inside Tune trial actors (covered by the sweep integration test)
    """Train one sampled config of a search space and report every epoch to Tune.

    ``mode="process"`` runs ``vse_ray.train.epoch_loop.run_training`` in the trial's own process (resources
    from ``tune.with_resources``, fractional GPUs allowed) and resumes from the trial's last Tune checkpoint.
    ``mode="ddp"`` fits a ``TorchTrainer`` from ``build_trainer`` (Tune over Train, Ray 2.60 pattern): its
    workers report through ``TuneReportCallback`` and Train resumes from its own ``(storage_path, name)``.

    Args:
        config: the Tune sample (flat keys of ``space.param_space()``).
        space: the sweep's search space.
        base: fixed TrainConfig fields of the sweep (``data_dir``, ``epochs``, ...), already resolved.
        mode: one of ``sweep_config.TRIAL_MODES``.
    """
    trial_id = tune.get_context().get_trial_id()
    cfg = trial_config(space, space.overrides(config), base).renamed(f"trial-{trial_id}")
    if mode == "process":
        train_in_trial(cfg)
    else:
        from ray.tune.integration.ray_train import TuneReportCallback

        from vse_ray.train.trainer import build_trainer

        build_trainer(cfg, callbacks=[TuneReportCallback()]).fit()


def named_grid(configs: dict[str, TrainConfig]) -> dict[str, Any]:
    """Tune param space with one trial per named config (the trial's config is ``{"run": name}``)."""
    return {NAMED_TRIAL_KEY: tune.grid_search(list(configs))}


def run_named_trial(
    config: dict[str, Any], *, configs: dict[str, dict[str, Any]]
) -> None:  # pragma: no cover, runs inside Tune trial actors (covered by the study integration test)
    """Train ``configs[config["run"]]`` (a ``TrainConfig.to_dict()``) in this trial's process."""
    train_in_trial(TrainConfig.from_dict(configs[config[NAMED_TRIAL_KEY]]).checked())


def train_in_trial(valid: CheckedConfig) -> None:  # pragma: no cover, runs inside Tune trial actors
    """``run_training`` in this process, resumed from the trial's last Tune checkpoint, reporting to Tune."""
    from vse_ray.checkpoint_files import load_checkpoint
    from vse_ray.train.epoch_loop import run_training
    from vse_ray.train.reporter import TuneReporter

    checkpoint = tune.get_checkpoint()
    start_state = None
    if checkpoint is not None:
        with checkpoint.as_directory() as directory:
            start_state = load_checkpoint(directory)
    run_training(valid, TuneReporter(), start_state)
