"""The one Ray Tune driver of vse_ray: sweeps, studies and the demo run their trials through `fit_trials`.

A `TuneRun` says where a Tune run lives (its folder, resumed when it exists), how each trial is tracked (one
nested MLflow run under a parent) and what a trial may use (resources, checkpoint ranking). `fit_trials`
builds or restores the `Tuner` and fits it (a trial that fills the disk stops the run: one line);
`saved_trial_statuses` tells which trials a restore would resume; `trial_run_id` and `best_checkpoint` read
a finished trial back; `record_trial` keeps its checkpoint on its MLflow run and returns its history.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from mlflow import MlflowClient
from ray import tune

from vse_ray.checkpoint_files import load_checkpoint, remove_partial_checkpoints
from vse_ray.disk_full import disk_full_value_error, is_disk_full
from vse_ray.tracking.filters import tag_equals
from vse_ray.tracking.recorder import RunRecorder
from vse_ray.tracking.uri import local_store
from vse_ray.tune.mlflow_trials import PARENT_TAG, TRIAL_TAG, TUNE_BOOKKEEPING_KEYS, MLflowTrialsCallback


@dataclass
class TuneRun:
    """One Ray Tune run and its MLflow tracking.

    Attributes:
        name: Tune experiment name; its folder is ``<storage_path>/<name>`` (a rerun resumes it).
        storage_path: parent folder of the Tune experiment folder (shared storage on a cluster).
        tracking_uri / experiment_id / parent_run_id: where each trial's nested MLflow run goes.
        trial_params: maps a trial's Tune config to its flat MLflow params (must include ``epochs``).
        resources: Ray resources of one trial, e.g. ``{"cpu": 1, "gpu": 0.25}``.
        run_name: maps a trial's Tune config to its MLflow run name (default ``<name>/<trial_id>``).
        metric / mode: how checkpoints are ranked (None keeps the latest ones).
        max_failures: retries of a failed trial (from its last checkpoint).
        callbacks: extra Tune callbacks (progress display).
        verbose: Tune's own console verbosity (0 = silent).
    """

    name: str
    storage_path: str
    tracking_uri: str
    experiment_id: str
    parent_run_id: str
    trial_params: Callable[[dict[str, Any]], dict[str, Any]]
    resources: dict[str, float]
    run_name: Callable[[dict[str, Any]], str] | None = None
    metric: str | None = "rsum"
    mode: str = "max"
    max_failures: int = 0
    callbacks: list[tune.Callback] = field(default_factory=list)
    verbose: int = 0

    @property
    def path(self) -> Path:
        return Path(self.storage_path) / self.name


def fit_trials(
    run: TuneRun,
    trainable: Callable[[dict[str, Any]], None],
    param_space: dict[str, Any],
    *,
    tune_config: tune.TuneConfig | None = None,
    stop: Any = None,
) -> tune.ResultGrid:
    """Fit the trials of ``param_space`` (or resume the run's folder when it holds an earlier run).

    The default ``tune_config`` reuses trial processes: a trial that ends hands its process (torch and the
    compiled kernels already loaded) to the next one.
    """
    trainable = tune.with_resources(trainable, run.resources)
    if tune.Tuner.can_restore(run.path):
        tuner = tune.Tuner.restore(
            str(run.path), trainable=trainable, resume_unfinished=True, resume_errored=True
        )
        return _stopped_by_a_full_disk(run, tuner.fit())
    tracking = MLflowTrialsCallback(
        run.tracking_uri, run.experiment_id, run.parent_run_id, run.name, run.trial_params, run.run_name
    )
    ranked: dict[str, Any] = {"checkpoint_score_attribute": run.metric, "checkpoint_score_order": run.mode}
    tuner = tune.Tuner(
        trainable,
        param_space=param_space,
        tune_config=tune_config or tune.TuneConfig(reuse_actors=True),
        run_config=tune.RunConfig(
            name=run.name,
            storage_path=str(run.storage_path),
            callbacks=[tracking, *run.callbacks],
            stop=stop,
            checkpoint_config=tune.CheckpointConfig(num_to_keep=2, **(ranked if run.metric else {})),
            failure_config=tune.FailureConfig(max_failures=run.max_failures),
            verbose=run.verbose,
        ),
    )
    return _stopped_by_a_full_disk(run, tuner.fit())


def _stopped_by_a_full_disk(run: TuneRun, results: tune.ResultGrid) -> tune.ResultGrid:
    """``results``, unless the disk filled in a trial: then the run stops with one line naming the file
    (every other trial would fill it too), and the checkpoints it cut short are removed. A rerun resumes."""
    errors = [results[index].error for index in range(len(results))]  # ResultGrid has no __iter__
    full = next((err for err in errors if err is not None and is_disk_full(err)), None)
    if full is None:
        return results
    partial = [path for trial in sorted(run.path.glob("*/")) for path in remove_partial_checkpoints(trial)]
    store = local_store(run.tracking_uri)
    shown = disk_full_value_error(full, store=store, folder=partial[0] if partial else run.path)
    raise (shown or full) from full


def saved_trial_statuses(path: str | Path) -> dict[str, str]:
    """Trial id -> status in the experiment state saved in the Tune folder ``path`` (what a restore resumes).

    An interrupted fit stops its running and pending trials on the way out and marks them TERMINATED in the
    ``ResultGrid`` it returns; the state it saved just before still holds them RUNNING or PENDING.
    """
    return {trial.trial_id: trial.status for trial in tune.ExperimentAnalysis(str(path)).trials}


def trial_run_id(run: TuneRun, result: tune.Result) -> str:
    """The MLflow run of a finished trial (tagged with its trial id, nested under the run's parent)."""
    trial_id = str((result.metrics or {})["trial_id"])
    query = f"{tag_equals(TRIAL_TAG, trial_id)} and {tag_equals(PARENT_TAG, run.parent_run_id)}"
    runs = MlflowClient(run.tracking_uri).search_runs([run.experiment_id], query, max_results=1)
    if not runs:
        raise RuntimeError(f"{run.name}: no MLflow run for trial {trial_id}")
    return runs[0].info.run_id


def best_checkpoint(
    result: tune.Result, metric: str = "rsum", mode: str = "max"
) -> tuple[tune.Checkpoint, dict[str, Any]]:
    """The kept checkpoint with the best ``metric`` and its epoch's metrics (Tune bookkeeping removed)."""
    pick = max if mode == "max" else min
    if not result.best_checkpoints:
        raise RuntimeError(f"trial {result.path}: kept no checkpoint")
    checkpoint, metrics = pick(result.best_checkpoints, key=lambda item: item[1][metric])
    return checkpoint, {k: v for k, v in metrics.items() if k not in TUNE_BOOKKEEPING_KEYS and k != "config"}


class RecordedTrial(NamedTuple):
    """An ended trial as :func:`record_trial` leaves it."""

    run_id: str  # its MLflow run
    checkpoint: tune.Checkpoint  # its best kept checkpoint
    history: list[dict[str, Any]]  # every epoch's reported metrics, from its latest checkpoint


def record_trial(run: TuneRun, result: tune.Result, tags: dict[str, str] | None = None) -> RecordedTrial:
    """The MLflow run of an ended trial, its best checkpoint (recorded on that run once) and its history.

    The first call sets ``tags`` and records the checkpoint as a ``train`` run's
    (:meth:`~vse_ray.tracking.recorder.RunRecorder.record_checkpoint`: what ``vse-ray evaluate --run``
    loads); a run that has it already (a resumed driver) is left as it is. The history is read from the
    trial's latest checkpoint, which Tune returned (nothing is read back from MLflow).
    """
    recorder = RunRecorder(trial_run_id(run, result), run.tracking_uri)
    checkpoint, best = best_checkpoint(result, run.metric or "rsum", run.mode)
    if result.checkpoint is None:
        raise RuntimeError(f"trial {result.path}: kept no checkpoint")
    with result.checkpoint.as_directory() as latest:  # its history holds every epoch of the trial
        last = load_checkpoint(latest)
    if not recorder.has_checkpoint():
        recorder.set_tags(tags or {})
        with checkpoint.as_directory() as folder:
            recorder.record_checkpoint(folder, best, last["history"], last["config"])
    return RecordedTrial(recorder.run_id, checkpoint, last["history"])
