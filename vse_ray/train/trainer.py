"""Driver side: build the TorchTrainer, fit (resuming by stable run name), and record the run in MLflow."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vse_ray.checkpoint_files import load_checkpoint, remove_partial_checkpoints
from vse_ray.disk_full import disk_full_is_an_error, disk_full_value_error
from vse_ray.tracking import get_or_create_experiment
from vse_ray.tracking.code_version import code_version
from vse_ray.tracking.outage import LiveEpochs, TrackingUnavailable, unavailable
from vse_ray.tracking.recorder import RunRecorder
from vse_ray.tracking.uri import local_store
from vse_ray.train.config import CheckedConfig
from vse_ray.train.in_process import train_in_process
from vse_ray.train.locked_image import compute_missing_caches
from vse_ray.train.preflight import CheckedTraining
from vse_ray.train.run_artifacts import log_training_plots

if TYPE_CHECKING:
    import ray.train
    from ray.train.torch import TorchTrainer

RAY_CHECKPOINT_LIST = "checkpoint_manager_snapshot.json"  # Ray Train's list of a run's checkpoints


@dataclass
class TrainResult:
    """What a finished training leaves behind."""

    run_id: str
    experiment_id: str
    tracking_uri: str
    best_metrics: dict[str, Any]
    best_checkpoint: Path
    history: list[dict[str, Any]]


def build_trainer(valid: CheckedConfig, *, callbacks: list | None = None) -> TorchTrainer:
    """A TorchTrainer with a stable `RunConfig(name=cfg.run_name, storage_path=...)`: re-fitting resumes.

    The workers trust the config they receive, checked where it was made.
    """
    import ray.train
    from ray.train.torch import TorchTrainer

    from vse_ray.train.worker import train_loop_per_worker

    checked = valid.resolved()
    cfg = checked.config
    if cfg.num_workers == 0:  # Ray Train's local mode would keep no checkpoint
        raise ValueError("num_workers 0 trains in the command's own process: `vse-ray train` only")
    workers = 1 if cfg.num_workers is None else cfg.num_workers  # none (a sweep's ddp trial): one worker
    resources: dict[str, float] = {"CPU": cfg.cpus_per_worker}
    if cfg.use_gpu:
        resources["GPU"] = 1.0
    return TorchTrainer(
        train_loop_per_worker,
        train_loop_config={"cfg": checked.to_dict()},
        scaling_config=ray.train.ScalingConfig(
            num_workers=workers,
            use_gpu=cfg.use_gpu,
            resources_per_worker=resources,
            placement_strategy=cfg.placement_strategy,
        ),
        run_config=ray.train.RunConfig(
            name=cfg.run_name,
            storage_path=cfg.storage_path,
            failure_config=ray.train.FailureConfig(max_failures=cfg.max_failures),
            checkpoint_config=ray.train.CheckpointConfig(
                num_to_keep=1, checkpoint_score_attribute="rsum", checkpoint_score_order="max"
            ),
            callbacks=callbacks,
        ),
    )


def fit(checked: CheckedTraining) -> TrainResult:
    """Train on Ray Train; log params, per-epoch metrics (each epoch once) and artifacts to MLflow.

    The driver alone writes to MLflow: it opens and closes the run, logs each epoch as Ray Train reports it
    (with its console line, `RunEpochLines`) and at the end every epoch of the checkpoint's history that the
    run lacks, and records the selected checkpoint; the workers never import MLflow. A locked-image run
    with `image_cache` first computes the tower embeddings the data folder lacks (`compute_missing_caches`).
    A tracking server that stops answering does not stop the training (`vse_ray.tracking.outage`); still
    gone at the end, it is one line (`TrackingUnavailable`), the run left for the rerun to complete.
    ``checked``: the training `check_training` checked, trusted here.
    """
    cfg, data = checked.config, checked.data
    if cfg.image_cache:
        compute_missing_caches(cfg)  # on Ray Data, once: the workers read them
    params = {**cfg.to_flat_dict(), **data.mlflow_params(), "code_version": code_version()}
    run_name, tracking_uri = cfg.filled("run_name"), cfg.filled("tracking_uri")
    store = local_store(tracking_uri)
    folder = Path(cfg.filled("storage_path")) / run_name
    try:
        with disk_full_is_an_error(cfg.output_dir, store=store):
            experiment_id = get_or_create_experiment(cfg.experiment, cfg.tracking_uri, cfg.output_dir)
            recorder = RunRecorder.open(experiment_id, run_name, tracking_uri, params)
    except Exception as err:
        _raise_if_unavailable(tracking_uri, folder, err)
        raise
    try:
        latest, best_dir, best_metrics = _train_and_record(checked, recorder)
    except (KeyboardInterrupt, SystemExit) as stop:  # Ray Train's SIGINT handler ends in sys.exit
        _finish(recorder, folder, "KILLED")
        raise KeyboardInterrupt from stop
    except TrackingUnavailable:
        raise  # the run stays RUNNING in the store that does not answer: the rerun completes it
    except Exception as err:
        full = disk_full_value_error(err, store=store, folder=folder)
        if full is None:
            _finish(recorder, folder, "FAILED")
            raise
        partial = _remove_partial_files(folder)  # frees space for the store to record the failure
        with contextlib.suppress(Exception):  # a store on the full disk may not take even that
            recorder.finish("FAILED", "disk full")
        raise (partial and disk_full_value_error(err, store=store, folder=partial) or full) from err
    recorder.finish()
    run_id = recorder.run_id
    return TrainResult(run_id, experiment_id, tracking_uri, dict(best_metrics), best_dir, latest["history"])


def _finish(recorder: RunRecorder, folder: Path, status: str) -> None:
    """End the run with ``status``; a tracking server that does not answer is one line (the rerun ends
    the run), not a second traceback."""
    try:
        recorder.finish(status)
    except Exception as err:
        _raise_if_unavailable(recorder.tracking_uri, folder, err)
        raise


def _raise_if_unavailable(uri: str, folder: Path, err: Exception) -> None:
    """:class:`TrackingUnavailable` (one line) from ``err`` when the tracking server ``uri`` does not
    answer now; else nothing (``err`` is another failure)."""
    gone = unavailable(uri, folder)
    if gone is not None:
        raise gone from err


def _train_and_record(
    checked: CheckedTraining, recorder: RunRecorder
) -> tuple[dict[str, Any], Path, dict[str, Any]]:
    """Fit, then record the run: every epoch of the checkpoint's history, the selected checkpoint, the
    plots. Returns the latest checkpoint, the selected checkpoint's folder and its metrics."""
    cfg = checked.config
    folder = Path(cfg.filled("storage_path")) / cfg.filled("run_name")
    live = LiveEpochs(recorder)  # a tracking server that stops answering: training goes on, epochs wait
    if cfg.num_workers == 0:  # in this process, without Ray
        latest, best_dir, best_metrics = train_in_process(checked.checked, folder, on_epoch=live)
    else:
        latest, best_dir, best_metrics = _fit_on_ray_train(checked, live)
    gone = unavailable(recorder.tracking_uri, folder) if live.lost is not None else None
    if gone is not None:  # still gone: no request waits on its retries
        raise gone
    try:
        # Every epoch the checkpoint holds, once: a driver killed after an epoch's checkpoint and before
        # its live log lost that epoch in MLflow, and the rerun resumes after it.
        recorder.log_epochs(latest["history"])
        recorder.record_checkpoint(best_dir, best_metrics, latest["history"], cfg.to_dict())
        log_training_plots(recorder, latest, best_metrics)
    except Exception as err:
        _raise_if_unavailable(recorder.tracking_uri, folder, err)
        raise
    return latest, best_dir, dict(best_metrics)


def _fit_on_ray_train(
    checked: CheckedTraining, on_epoch: LiveEpochs
) -> tuple[dict[str, Any], Path, dict[str, Any]]:
    """Fit on Ray Train, each reported epoch printed and handed to ``on_epoch`` as it arrives; returns the
    latest checkpoint, the best checkpoint's folder and its metrics."""
    from vse_ray.train.epoch_lines import RunEpochLines

    cfg = checked.config
    lines = RunEpochLines(cfg.epochs, on_epoch=on_epoch)
    trainer = build_trainer(checked.checked, callbacks=[lines.callback])
    with lines:
        result = trainer.fit()
    if lines.error is not None:
        raise lines.error
    if result.checkpoint is None or not result.best_checkpoints:
        raise RuntimeError(f"run {cfg.filled('run_name')}: Ray Train returned no checkpoint")
    with result.checkpoint.as_directory() as latest_dir:
        latest = load_checkpoint(latest_dir)
    best_checkpoint, best_metrics = max(result.best_checkpoints, key=lambda item: item[1]["rsum"])
    return latest, _local_dir(best_checkpoint), dict(best_metrics)


def _remove_partial_files(folder: Path) -> Path | None:
    """Remove what a full disk cut short in the run's folder: checkpoints (the first one's file is
    returned) and Ray Train's list of them when it could write none of it (a rerun then starts afresh, as
    without one; an empty list would stop it)."""
    removed = remove_partial_checkpoints(folder) if folder.is_dir() else []
    snapshot = folder / RAY_CHECKPOINT_LIST
    if snapshot.is_file() and not snapshot.stat().st_size:
        snapshot.unlink()
    return removed[0] if removed else None


def _local_dir(checkpoint: ray.train.Checkpoint) -> Path:
    """The checkpoint's folder on this machine (downloaded when the storage is remote)."""
    if checkpoint.filesystem is None or checkpoint.filesystem.type_name == "local":
        return Path(checkpoint.path)
    return Path(checkpoint.to_directory())
