"""Train every loss family as the trials of one Ray Tune run: a grid over `loss`, one MLflow run per loss.

Each trial runs `vse_ray.train.engine.run_training` in its own process (`vse_ray.tune.trial.run_trial`,
``mode="process"``): no TorchTrainer start-up per loss, and trials share the CPUs (``cpus_per_trial`` each).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlflow import MlflowClient
from ray import tune

from vse_ray.tracking.checkpoint import load_checkpoint
from vse_ray.train.config import TrainConfig
from vse_ray.train.run_artifacts import log_training_artifacts
from vse_ray.tune.distributions import Distribution
from vse_ray.tune.mlflow_trials import PARENT_TAG, TRIAL_TAG, TUNE_BOOKKEEPING_KEYS, MLflowTrialsCallback
from vse_ray.tune.search_space import SearchSpace
from vse_ray.tune.sweep import trial_params
from vse_ray.tune.trial import run_trial


@dataclass
class TrainedLoss:
    """One finished trial: its MLflow run, wall time and best validation metrics."""

    run_id: str
    seconds: float
    best_metrics: dict[str, float]


def loss_grid(losses: tuple[str, ...]) -> SearchSpace:
    """A space whose one leaf is a grid over `loss` (a trial's override replaces the space's own loss)."""
    return SearchSpace(loss=losses[0], leaves={"loss": Distribution("grid", tuple(losses))}, source="demo")


def _with_loss_params(base: dict[str, Any], loss_params: dict[str, dict[str, Any]], loss: str) -> dict:
    return {**base, "loss_params": dict(loss_params.get(loss, {}))}


def _loss_trial(
    config: dict[str, Any], *, space: SearchSpace, base: dict, loss_params: dict, mode: str
) -> None:  # pragma: no cover, runs inside Tune trial actors (covered by the tiny demo test)
    """`run_trial` with the hyper-parameters of this trial's loss."""
    run_trial(config, space=space, base=_with_loss_params(base, loss_params, config["loss"]), mode=mode)


def _loss_trial_params(config: dict[str, Any], *, space: SearchSpace, base: dict, loss_params: dict) -> dict:
    return trial_params(config, space=space, base=_with_loss_params(base, loss_params, config["loss"]))


def train_losses_with_tune(
    cfg: TrainConfig,
    losses: tuple[str, ...],
    *,
    loss_params: dict[str, dict[str, Any]],
    name: str,
    parent_run_id: str,
    experiment_id: str,
    concurrent: int,
    cpus_per_trial: float,
) -> dict[str, TrainedLoss]:
    """Train `cfg` once per loss as Tune trials (`concurrent` at a time), log each run's artifacts.

    Args:
        cfg: Resolved training config shared by every trial (its `loss` is replaced per trial).
        losses: Loss families, one trial each.
        loss_params: Hyper-parameters per loss family (`make_loss` keywords); missing: the loss defaults.
        name: Tune run name under `cfg.storage_path` (a rerun with the same name resumes it).
        parent_run_id: MLflow run the trial runs are nested under.
        experiment_id: MLflow experiment of the runs.
        concurrent: Trials running at once.
        cpus_per_trial: Ray CPUs of each trial (its torch threads follow Ray's OMP_NUM_THREADS).
    """
    space = loss_grid(losses)
    base = cfg.to_dict()
    base.pop("loss")
    base.pop("loss_params")
    uri = cfg.tracking_uri
    trainable = tune.with_resources(
        tune.with_parameters(_loss_trial, space=space, base=base, loss_params=loss_params, mode="process"),
        {"cpu": cpus_per_trial},
    )
    path = Path(cfg.storage_path) / name
    if tune.Tuner.can_restore(path):
        tuner = tune.Tuner.restore(
            str(path), trainable=trainable, resume_unfinished=True, resume_errored=True
        )
    else:
        callback = MLflowTrialsCallback(
            uri,
            experiment_id,
            parent_run_id,
            name,
            functools.partial(_loss_trial_params, space=space, base=base, loss_params=loss_params),
        )
        tuner = tune.Tuner(
            trainable,
            param_space=space.param_space(),
            tune_config=tune.TuneConfig(max_concurrent_trials=concurrent),
            run_config=tune.RunConfig(
                name=name,
                storage_path=cfg.storage_path,
                callbacks=[callback],
                checkpoint_config=tune.CheckpointConfig(
                    num_to_keep=2, checkpoint_score_attribute="rsum", checkpoint_score_order="max"
                ),
                failure_config=tune.FailureConfig(max_failures=cfg.max_failures),
                verbose=0,
            ),
        )
    client = MlflowClient(uri)
    trained = {}
    for result in tuner.fit():
        loss = result.config["loss"]
        if result.error is not None:
            raise RuntimeError(f"training loss '{loss}' failed: {result.error}") from result.error
        query = f"tags.`{TRIAL_TAG}` = '{result.metrics['trial_id']}'"
        runs = client.search_runs([experiment_id], f"{query} and tags.`{PARENT_TAG}` = '{parent_run_id}'")
        run_id = runs[0].info.run_id
        best_checkpoint, best = max(result.best_checkpoints, key=lambda item: item[1]["rsum"])
        best = {k: v for k, v in best.items() if k not in TUNE_BOOKKEEPING_KEYS and k != "config"}
        with result.checkpoint.as_directory() as latest_dir:
            latest = load_checkpoint(latest_dir)
        trial_cfg = TrainConfig.from_dict(latest["config"])
        log_training_artifacts(trial_cfg, run_id, Path(best_checkpoint.path), latest, best)
        trained[loss] = TrainedLoss(run_id, float(result.metrics["time_total_s"]), best)
    return trained
