"""Driver-side Tune callback: one MLflow run per trial, nested under the sweep's parent run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ray.tune import Callback
from ray.tune.result import AUTO_RESULT_KEYS

from vse_ray.tracking.metric_keys import PATIENCE_STOP
from vse_ray.tracking.recorder import RunRecorder
from vse_ray.tracking.tags import (  # noqa: F401 (re-exported)
    BEST_METRIC,
    BEST_PARAM,
    PARENT_TAG,
    STOP_TAG,
    SWEEP_PARAM,
    TRIAL_TAG,
)

# Tune bookkeeping that is not a training metric (time_total_s is kept: wall time per trial is useful).
TUNE_BOOKKEEPING_KEYS = frozenset(AUTO_RESULT_KEYS) - {"time_total_s"} | {"done", "should_checkpoint"}


class MLflowTrialsCallback(Callback):
    """Logs each Tune trial as a nested MLflow run and closes it with the right status.

    A trial that reports all its epochs ends FINISHED (``completed``), and so does one its own patience ended
    (``patience``); one the scheduler stops before its last epoch ends KILLED with tag
    ``vse_ray.stop_reason=early_stopped``; an errored trial ends FAILED; a trial still running
    when the sweep is interrupted ends KILLED (``interrupted``). Runs are named ``<sweep>/<trial_id>`` (or by
    ``run_name``) so a trial resumed by ``Tuner.restore`` continues its run, each epoch logged once.

    Args:
        tracking_uri: absolute MLflow tracking URI.
        experiment_id: experiment holding the parent run.
        parent_run_id: the sweep's run; every trial run is tagged ``mlflow.parentRunId`` = this id.
        sweep_name: prefix of the trial run names.
        trial_params: maps a trial's Tune config to its flat, MLflow-safe params (must include ``epochs``).
        run_name: maps a trial's Tune config to a stable run name (default ``<sweep_name>/<trial_id>``).
    """

    def __init__(
        self,
        tracking_uri: str,
        experiment_id: str,
        parent_run_id: str,
        sweep_name: str,
        trial_params: Callable[[dict], dict[str, Any]],
        run_name: Callable[[dict], str] | None = None,
    ) -> None:
        self.tracking_uri = tracking_uri
        self.experiment_id = experiment_id
        self.parent_run_id = parent_run_id
        self.sweep_name = sweep_name
        self.trial_params = trial_params
        self.run_name = run_name
        self.runs: dict[str, str] = {}
        self._open: set[str] = set()
        self._epochs: dict[str, int] = {}

    def on_trial_start(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        params = self.trial_params(trial.config)
        self._epochs[trial.trial_id] = int(params["epochs"])
        name = self.run_name(trial.config) if self.run_name else f"{self.sweep_name}/{trial.trial_id}"
        tags = {PARENT_TAG: self.parent_run_id, TRIAL_TAG: trial.trial_id}
        recorder = RunRecorder.open(self.experiment_id, name, self.tracking_uri, params, tags)
        self.runs[trial.trial_id] = recorder.run_id
        self._open.add(trial.trial_id)

    def on_trial_result(self, iteration: int, trials: list, trial: Any, result: dict, **info: Any) -> None:
        if trial.trial_id in self._open and "epoch" in result:
            metrics = {k: v for k, v in result.items() if k not in TUNE_BOOKKEEPING_KEYS}
            RunRecorder(self.runs[trial.trial_id], self.tracking_uri).log_epochs([metrics])

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        last = trial.last_result or {}
        if last.get(PATIENCE_STOP):
            self._close(trial.trial_id, "FINISHED", "patience")
        elif int(last.get("epoch", 0)) < self._epochs.get(trial.trial_id, 0):
            self._close(trial.trial_id, "KILLED", "early_stopped")
        else:
            self._close(trial.trial_id, "FINISHED", "completed")

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._close(trial.trial_id, "FAILED", "error")

    def on_experiment_end(self, trials: list, **info: Any) -> None:
        for trial_id in sorted(self._open):
            self._close(trial_id, "KILLED", "interrupted")

    def _close(self, trial_id: str, status: str, reason: str) -> None:
        if trial_id not in self._open:
            return
        self._open.discard(trial_id)
        RunRecorder(self.runs[trial_id], self.tracking_uri).finish(status, reason)
