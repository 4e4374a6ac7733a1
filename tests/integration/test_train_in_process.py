"""`num_workers: 0`: a run trained in the command's own process, without Ray; its checkpoints, resume,
MLflow record and console lines (its equality with the Ray Train run: `test_train_ray.py`)."""

from __future__ import annotations

import json

import pytest
from mlflow import MlflowClient
from typer.testing import CliRunner

from tests.support.tiny_store import tiny_config, write_tiny_store
from vse_ray.cli.main import app
from vse_ray.file_lock import release_all
from vse_ray.train.config import TrainConfig
from vse_ray.train.in_process import PREFIX, kept_checkpoints
from vse_ray.train.preflight import check_training
from vse_ray.train.rerun import claim_run
from vse_ray.train.trainer import fit


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return write_tiny_store(tmp_path_factory.mktemp("tiny_local") / "tiny")


def _cfg(tiny_dir, tmp_path, mlflow_uri, **overrides) -> TrainConfig:
    return tiny_config(tiny_dir, tmp_path / "out", num_workers=0, tracking_uri=mlflow_uri, **overrides)


def _fit(cfg: TrainConfig, resume: bool = False):
    planned = claim_run(cfg.checked().config, resume=resume, notify=lambda line: None)
    try:
        return fit(check_training(planned.checked()))
    finally:
        release_all()  # the end of the command


def test_a_stopped_run_resumes_to_the_numbers_of_an_uninterrupted_one(tiny_dir, tmp_path, mlflow_uri, capsys):
    whole = _fit(_cfg(tiny_dir, tmp_path, mlflow_uri, run_name="whole", epochs=3))
    first = _fit(_cfg(tiny_dir, tmp_path, mlflow_uri, run_name="parts", epochs=2))
    folder = tmp_path / "out" / "ray_results" / "parts"
    assert set(kept_checkpoints(folder)) <= {1, 2} and 2 in kept_checkpoints(folder)
    rest = _fit(_cfg(tiny_dir, tmp_path, mlflow_uri, run_name="parts", epochs=3), resume=True)
    assert rest.run_id == first.run_id  # the same MLflow run goes on
    assert rest.history == whole.history
    steps = sorted(m.step for m in MlflowClient(mlflow_uri).get_metric_history(rest.run_id, "val/rsum"))
    assert steps == [1, 2, 3]
    kept = kept_checkpoints(folder)
    best = max(whole.history, key=lambda m: m["rsum"])["epoch"]
    assert set(kept) == {3, best}  # the latest and the best by validation rsum, as the Ray Train run keeps
    assert rest.best_checkpoint == folder / f"{PREFIX}{best:04d}" and rest.best_metrics["epoch"] == best
    printed = [
        line.split(":")[0] for line in capsys.readouterr().out.splitlines() if line.startswith("epoch ")
    ]
    assert printed == ["epoch 1/3", "epoch 2/3", "epoch 3/3", "epoch 1/2", "epoch 2/2", "epoch 3/3"]


def test_a_copy_cut_short_is_removed_and_the_epoch_trained_again(tiny_dir, tmp_path, mlflow_uri):
    cfg = _cfg(tiny_dir, tmp_path, mlflow_uri, run_name="cut", epochs=2)
    _fit(cfg)
    folder = tmp_path / "out" / "ray_results" / "cut"
    partial = folder / f".partial_{PREFIX}0003"
    (partial / "model.pt").parent.mkdir(parents=True)
    (partial / "model.pt").write_bytes(b"cut short")
    result = _fit(_cfg(tiny_dir, tmp_path, mlflow_uri, run_name="cut", epochs=3), resume=True)
    assert not partial.exists() and 3 in kept_checkpoints(folder)
    assert [m["epoch"] for m in result.history] == [1, 2, 3]


def test_the_command_trains_in_process_by_default_and_refuses_a_ray_address(tiny_dir, tmp_path, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))  # no `ray start` of this machine to join
    out = tmp_path / "cli"
    args = ["train", "--data", str(tiny_dir), "--output-dir", str(out), "--epochs", "1"]
    args += ["--batch-size", "16", "--word-dim", "16", "--embed-dim", "32", "--loss", "vsepp"]
    done = CliRunner().invoke(app, args)  # one CPU worker on one machine: the default trains in process
    assert done.exit_code == 0, done.output
    assert "epoch 1/1: val rsum" in done.output and "best epoch 1" in done.output
    assert list((out / "ray_results").glob(f"*/{PREFIX}0001/model.pt"))
    (record,) = (out / "ray_results").glob("*/vse_ray_config.json")
    assert json.loads(record.read_text())["config"]["num_workers"] == 0  # a rerun resumes the same way
    refused = CliRunner().invoke(
        app,
        [*args, "--num-workers", "0", "--ray-address", "127.0.0.1:6379", "--output-dir", str(tmp_path / "r")],
    )
    assert refused.exit_code == 2
    assert "error: --ray-address: num_workers 0 trains in this process" in refused.output
