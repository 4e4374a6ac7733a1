"""A sweep and a study stopped by Ctrl-C, then killed (SIGKILL) mid-run, then run again to the end.

Each command runs as its own driver process on the shared Ray instance. After each stop the run's folder is
free again (the next command is not refused as "in use"), the rerun resumes, and at the end nothing is lost
or mixed: one MLflow parent run, every epoch of every trial logged once, no run left RUNNING. The consoles
carry vse_ray's lines only. An epoch the console showed before Ctrl-C is not trained again.
"""

from __future__ import annotations

import csv
import signal
from pathlib import Path

import pytest
from mlflow import MlflowClient

from tests.support.cli import run_cli
from tests.support.driver_process import Driver
from tests.support.tiny_commands import study_file, sweep_args
from tests.support.tiny_store import tiny_config
from vse_ray.cli.errors import RESUME_HINTS
from vse_ray.study.summary import ROW_TAG
from vse_ray.tracking.metric_keys import EPOCH_KEYS, VAL_RSUM
from vse_ray.tracking.recorder import RunRecorder
from vse_ray.train.preflight import check_training
from vse_ray.train.trainer import fit
from vse_ray.tune.mlflow_trials import PARENT_TAG

pytestmark = pytest.mark.ray


def _stop_at(args: list[str], cwd: Path, line: str, sig: signal.Signals) -> tuple[int, str]:
    """Run ``vse-ray ARGS`` until its console shows ``line``, then send ``sig``; its exit code and console."""
    driver = Driver(args, cwd)
    driver.wait_for(line)
    return driver.stop(sig)


def _epochs_logged_once(client: MlflowClient, runs: list, epochs: list[int]) -> None:
    for run in runs:
        steps = sorted(m.step for m in client.get_metric_history(run.info.run_id, VAL_RSUM))
        assert steps == epochs, (run.info.run_name, steps)


def _epochs_trained(trial_folder: Path) -> list[int]:
    """The epochs a trial reported to Tune, in order, over every run of the command (its ``progress.csv``)."""
    with (trial_folder / "progress.csv").open(newline="") as rows:
        return [int(row["epoch"]) for row in csv.DictReader(rows)]


def test_a_sweep_stopped_by_ctrl_c_then_killed_resumes_to_the_end(ray_session, tiny_data_dir, tmp_path):
    out = tmp_path / "out"
    args = sweep_args(tiny_data_dir, tmp_path, "--num-samples", "2", "--epochs", "3", "--max-concurrent", "1")
    folder = out / "ray_results" / "tiny"

    code, stopped = _stop_at(args, tmp_path, "epoch 1/3", signal.SIGINT)  # the first trial's first epoch
    assert code == 130, stopped
    assert stopped.splitlines()[-1] == f"stopped by Ctrl-C: {RESUME_HINTS['sweep']}", stopped

    code, killed = _stop_at(args, tmp_path, "epoch ", signal.SIGKILL)  # resumed: mid-trial, mid-epoch
    assert code == -signal.SIGKILL, killed
    for console in (stopped, killed):  # vse_ray's lines only: Ray's, Tune's and MLflow's are in the log file
        assert all(
            line.startswith(("Ray and MLflow logs: ", "Resuming sweep", "[tiny] ", "stopped by"))
            for line in console.splitlines()
        ), console

    result = run_cli(args)  # the killed command's lock went with it: no wait, and the sweep resumes
    assert result.exit_code == 0, result.output
    assert "Sweep tiny: 2/2 trials ended" in result.output
    client = MlflowClient(f"sqlite:///{out / 'mlflow.db'}")
    (experiment,) = [e for e in client.search_experiments() if e.name == tiny_data_dir.name]
    runs = client.search_runs([experiment.experiment_id])
    (parent,) = [run for run in runs if PARENT_TAG not in run.data.tags]
    trials = [run for run in runs if run.data.tags.get(PARENT_TAG) == parent.info.run_id]
    assert len(runs) == 3 and len(trials) == 2
    assert {run.info.status for run in runs} == {"FINISHED"}
    _epochs_logged_once(client, trials, [1, 2, 3])
    trial_folders = list(folder.glob("run_trial_*"))
    assert len(trial_folders) == 2  # each trial resumed in its own folder
    for trial_folder in trial_folders:  # the first epoch (shown before Ctrl-C) was kept, not trained again
        assert _epochs_trained(trial_folder).count(1) == 1, trial_folder


def test_a_study_stopped_by_ctrl_c_then_killed_resumes_to_the_end(ray_session, tiny_data_dir, tmp_path):
    study = study_file(tiny_data_dir, tmp_path, epochs=2, losses=("vsepp", "lseh"))
    out = tmp_path / "out"
    args = ["study", str(study), "--output-dir", str(out)]
    code, stopped = _stop_at(args, tmp_path, "[tiny] train: 1/", signal.SIGINT)  # after the warm-up
    assert code == 130, stopped
    assert stopped.splitlines()[-1] == f"stopped by Ctrl-C: {RESUME_HINTS['study']}", stopped

    code, killed = _stop_at(args, tmp_path, "[tiny] train: 1/", signal.SIGKILL)
    assert code == -signal.SIGKILL, killed
    for console in (stopped, killed):
        assert all(line.startswith(("[tiny] ", "stopped by")) for line in console.splitlines()), console

    result = run_cli(args)
    assert result.exit_code == 0, result.output
    client = MlflowClient(f"sqlite:///{out / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("study-tiny")
    runs = client.search_runs([experiment.experiment_id])
    (parent,) = [run for run in runs if PARENT_TAG not in run.data.tags]
    children = [run for run in runs if run.data.tags.get(PARENT_TAG) == parent.info.run_id]
    assert sorted(run.info.run_name for run in children) == ["lseh-s0", "vsepp-s0", "warmup-s0"]
    assert {run.info.status for run in runs} == {"FINISHED"}
    _epochs_logged_once(
        client, [run for run in children if ROW_TAG in run.data.tags], [2, 3]
    )  # after the warm-up's
    assert all("test/rsum" in run.data.metrics for run in children if ROW_TAG in run.data.tags)
    trial_folders = list((out / "ray_results" / "tiny-train").glob("run_named_trial_*"))
    assert len(trial_folders) == 2
    for trial_folder in trial_folders:  # vsepp's epoch 2, shown before Ctrl-C, was kept, not trained again
        assert _epochs_trained(trial_folder).count(2) == 1, trial_folder


def test_an_epoch_checkpointed_but_not_logged_by_a_killed_train_reaches_mlflow(
    ray_session, tiny_data_dir, tmp_path, mlflow_uri, monkeypatch
):
    """A driver killed between an epoch's checkpoint and its live MLflow log (the workers run ahead of the
    driver's log by up to a second) left the epoch out of MLflow, and the rerun resumed after it. Here the
    live log of epoch 2 is lost; every epoch the checkpoint holds still reaches MLflow, once."""
    live = RunRecorder.log_epochs
    lost: list[int] = []

    def loses_epoch_2(self, history):
        kept = [m for m in history if m["epoch"] != 2 or lost]
        lost.extend(m["epoch"] for m in history if m not in kept)
        return live(self, kept)

    monkeypatch.setattr(RunRecorder, "log_epochs", loses_epoch_2)
    cfg = tiny_config(tiny_data_dir, tmp_path / "out", epochs=2, num_workers=1, tracking_uri=mlflow_uri)
    result = fit(check_training(cfg.checked()))
    assert lost == [2]
    client = MlflowClient(mlflow_uri)
    for key in (VAL_RSUM, EPOCH_KEYS["train_loss"]):
        assert sorted(m.step for m in client.get_metric_history(result.run_id, key)) == [1, 2], key
