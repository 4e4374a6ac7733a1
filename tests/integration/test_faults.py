"""Faults a careless user or a busy machine brings, from outside the commands.

A sweep and a study stopped by Ctrl-C, then killed (SIGKILL) mid-run, then run again to the end: each
command runs as its own driver process on the shared Ray instance. After each stop the run's folder is
free again (the next command is not refused as "in use"), the rerun resumes, and at the end nothing is lost
or mixed: one MLflow parent run, every epoch of every trial logged once, no run left RUNNING. The consoles
carry vse_ray's lines only. An epoch the console showed before Ctrl-C is not trained again.

A full disk during each write: a checkpoint (`train`, `sweep`, `study`, through the workers' fault hook), the
MLflow store (`train`) and the data store (`precompute`): one line naming the file, the MLflow runs FAILED,
no file cut short left behind, and the same command run again after freeing space ends the run.
"""

from __future__ import annotations

import csv
import signal
import sqlite3
from pathlib import Path

import pytest
import torch
from mlflow import MlflowClient

from tests.support.cli import run_cli
from tests.support.driver_process import Driver
from tests.support.tiny_commands import study_file, sweep_args
from tests.support.tiny_store import tiny_config
from tests.support.worker_faults import request_disk_full
from vse_ray.cli.errors import RESUME_HINTS
from vse_ray.data.store.verify import verify_data_dir
from vse_ray.study.summary import ROW_TAG
from vse_ray.tracking.metric_keys import EPOCH_KEYS, VAL_RSUM
from vse_ray.tracking.recorder import RunRecorder
from vse_ray.train.preflight import check_training
from vse_ray.train.trainer import fit
from vse_ray.tune.mlflow_trials import PARENT_TAG

pytestmark = [pytest.mark.ray, pytest.mark.faults]


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


def _runs(out: Path, experiment: str) -> list:
    client = MlflowClient(f"sqlite:///{out / 'mlflow.db'}")
    return client.search_runs([client.get_experiment_by_name(experiment).experiment_id])


def _on_a_full_disk(args: list[str], worker_faults: Path, tmp_path: Path, folder: Path) -> None:
    """Run ``vse-ray ARGS`` while every checkpoint copy fills the disk: one line naming the checkpoint file
    under ``folder``, and no checkpoint cut short left there."""
    request = request_disk_full(worker_faults, tmp_path / "full.txt")
    try:
        result = run_cli(args)
    finally:
        request.unlink()  # space freed
    assert (tmp_path / "full.txt").exists()  # the disk filled at a checkpoint
    assert result.exit_code == 2, result.output
    error = result.output.splitlines()[-2]
    assert error.startswith(f"error: no space left on device writing {folder}/"), result.output
    assert error.endswith("/model.pt: free space and run the same command again to resume"), error
    assert "Traceback" not in result.output and "Logging error" not in result.output
    for checkpoint in folder.rglob("checkpoint_*/model.pt"):
        torch.load(checkpoint, weights_only=True)  # whole, or it would not load


def test_a_train_that_fills_the_disk_at_a_checkpoint_is_one_line_then_resumes(
    ray_session, worker_faults, tiny_data_dir, tmp_path
):
    out = tmp_path / "out"
    args = ["train", "--data", str(tiny_data_dir), "--output-dir", str(out), "--epochs", "2"]
    args += ["--batch-size", "16", "--set", "word_dim=16", "--set", "embed_dim=32", "--max-failures", "0"]
    args += ["--num-workers", "1"]  # on Ray Train: its workers fill the disk
    _on_a_full_disk(args, worker_faults, tmp_path, out / "ray_results")
    (run,) = _runs(out, tiny_data_dir.name)
    assert run.info.status == "FAILED"

    result = run_cli(args)  # the same command trains the run to its end
    assert result.exit_code == 0, result.output
    (run,) = _runs(out, tiny_data_dir.name)
    assert run.info.status == "FINISHED"
    _epochs_logged_once(MlflowClient(f"sqlite:///{out / 'mlflow.db'}"), [run], [1, 2])


def test_a_sweep_that_fills_the_disk_at_a_checkpoint_is_one_line_then_resumes(
    ray_session, worker_faults, tiny_data_dir, tmp_path
):
    out = tmp_path / "out"
    args = sweep_args(tiny_data_dir, tmp_path, "--num-samples", "1", "--epochs", "2")
    _on_a_full_disk(args, worker_faults, tmp_path, out / "ray_results" / "tiny")
    assert {run.info.status for run in _runs(out, tiny_data_dir.name)} == {"FAILED"}  # parent and trial

    result = run_cli(args)
    assert result.exit_code == 0, result.output
    assert "Sweep tiny: 1/1 trials ended, 0 failed" in result.output


def test_a_study_that_fills_the_disk_at_a_checkpoint_is_one_line_then_resumes(
    ray_session, worker_faults, tiny_data_dir, tmp_path
):
    out = tmp_path / "out"
    args = ["study", str(study_file(tiny_data_dir, tmp_path, epochs=1)), "--output-dir", str(out)]
    _on_a_full_disk(args, worker_faults, tmp_path, out / "ray_results")
    assert {run.info.status for run in _runs(out, "study-tiny")} == {"FAILED"}

    result = run_cli(args)
    assert result.exit_code == 0, result.output
    assert {run.info.status for run in _runs(out, "study-tiny")} == {"FINISHED"}


def test_a_train_whose_mlflow_store_fills_the_disk_is_one_line(
    ray_session, tiny_data_dir, tmp_path, monkeypatch
):
    out = tmp_path / "out"
    log_batch = MlflowClient.log_batch

    def full(self, run_id, metrics=(), *args, **kwargs):  # an epoch's metrics no longer fit
        if metrics and any(m.key == VAL_RSUM for m in metrics):
            raise sqlite3.OperationalError("database or disk is full")
        return log_batch(self, run_id, metrics, *args, **kwargs)

    monkeypatch.setattr(MlflowClient, "log_batch", full)
    args = ["train", "--data", str(tiny_data_dir), "--output-dir", str(out), "--epochs", "1"]
    args += ["--num-workers", "1"]  # on Ray Train: the epoch reaches the store from its queue
    result = run_cli([*args, "--batch-size", "16", "--set", "word_dim=16", "--set", "embed_dim=32"])
    assert result.exit_code == 2, result.output
    assert result.output.splitlines()[-2] == (
        f"error: no space left on device writing {out / 'mlflow.db'}: free space and run the same command "
        "again to resume"
    )
    assert "Traceback" not in result.output and "Exception in thread" not in result.output
    (run,) = _runs(out, tiny_data_dir.name)
    assert run.info.status == "FAILED"


def test_a_precompute_that_fills_the_disk_is_one_line_and_its_rerun_leaves_no_partial_file(
    ray_session, worker_faults, tmp_path
):
    out = tmp_path / "data"
    args = ["precompute", "--out", str(out), "--n-train", "8", "--n-val", "4", "--n-test", "4"]
    args += ["--cnn", "small", "--weights", "none"]
    request = request_disk_full(worker_faults, tmp_path / "full.txt", write="store")
    try:
        result = run_cli(args)
    finally:
        request.unlink()
    assert result.exit_code == 2, result.output
    error = result.output.splitlines()[-2]
    assert error.startswith(f"error: no space left on device writing {out / 'features'}/split="), (
        result.output
    )
    assert error.endswith(".parquet: free space and rerun: finished shards are kept"), error
    assert not [p for p in out.rglob(".*") if p.name != ".vse_ray.lock"]  # no hidden file cut short

    result = run_cli(args)
    assert result.exit_code == 0, result.output
    assert not [p for p in out.rglob(".*") if p.name != ".vse_ray.lock"]
    assert verify_data_dir(out).images == {"train": 8, "val": 4, "test": 4}
