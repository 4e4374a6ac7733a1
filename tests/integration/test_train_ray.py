"""Ray Train end to end on the tiny folder: DDP on Gloo, MLflow, resume after a killed worker, determinism."""

from __future__ import annotations

import json

import pytest
from mlflow import MlflowClient
from typer.testing import CliRunner

from tests.conftest import stray_files
from tests.support.tiny_store import tiny_config, write_tiny_store
from tests.support.worker_faults import request_kill
from vse_ray.cli.main import app
from vse_ray.data.store.verify import verify_data_dir
from vse_ray.train.config import TrainConfig
from vse_ray.train.preflight import check_training
from vse_ray.train.trainer import fit

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return write_tiny_store(tmp_path_factory.mktemp("tiny_ray") / "tiny")


def _cfg(tiny_dir, tmp_path, mlflow_uri, **overrides) -> TrainConfig:
    settings = {"num_workers": 1, "cpus_per_worker": 0.5, "tracking_uri": mlflow_uri, **overrides}
    return tiny_config(tiny_dir, tmp_path / "out", **settings)


def _epochs_in_mlflow(uri: str, run_id: str) -> list[int]:
    return sorted(m.step for m in MlflowClient(uri).get_metric_history(run_id, "val/rsum"))


def test_ddp_fit_logs_mlflow_and_evaluate_cli(ray_session, tiny_dir, tmp_path, mlflow_uri, empty_cwd, capsys):
    cfg = _cfg(
        tiny_dir, tmp_path, mlflow_uri, loss="ladder", num_workers=2, epochs=2, placement_strategy="SPREAD"
    )
    result = fit(check_training(cfg.checked()))
    assert [m["epoch"] for m in result.history] == [1, 2]
    assert _epochs_in_mlflow(mlflow_uri, result.run_id) == [1, 2]
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("epoch ")]
    assert [line.split(":")[0] for line in printed] == ["epoch 1/2", "epoch 2/2"]
    assert f"val rsum {result.history[1]['rsum']:.1f}, train loss" in printed[1] and printed[1].endswith(" s")
    client = MlflowClient(mlflow_uri)
    run = client.get_run(result.run_id)
    assert run.info.status == "FINISHED" and run.data.params["loss"] == "ladder"
    assert run.data.params["num_workers"] == "2" and "code_version" in run.data.params
    assert run.data.params["placement_strategy"] == "SPREAD"  # one node: SPREAD places both workers on it
    assert run.data.params["data.train_images"] == "96" and run.data.params["data.val_captions"] == "100"
    assert run.data.params["data.manifest_sha256"] == verify_data_dir(tiny_dir).manifest_sha256
    artifacts = {a.path for a in client.list_artifacts(result.run_id)}
    assert {"config.json", "metrics.json", "metrics.csv", "checkpoint", "plots"} <= artifacts
    assert run.data.metrics["val/best_rsum"] == pytest.approx(max(m["rsum"] for m in result.history))
    plots = {a.path for a in client.list_artifacts(result.run_id, "plots")}
    assert "plots/batch_relevance_histogram.png" in plots and "plots/val_cs_at_k.png" in plots

    out = CliRunner().invoke(
        app,
        [
            "evaluate",
            "--run",
            result.run_id,
            "--tracking-uri",
            mlflow_uri,
            "--output-dir",
            str(tmp_path / "ev"),
        ],
    )
    assert out.exit_code == 0, out.output
    report = json.loads((tmp_path / "ev" / "reports" / f"{result.run_id}_test_full.json").read_text())
    assert report["split"] == "test" and 0 <= report["metrics"]["R_at_1_t2i"] <= 100
    logged = client.get_run(result.run_id).data.metrics
    assert logged["test/rsum"] == pytest.approx(report["metrics"]["rsum"])
    assert "test/R_at_1_t2i" in logged and "test/NCS_at_5_t2i" not in logged  # headline metrics only
    evaluation = {a.path for a in client.list_artifacts(result.run_id, "evaluation")}
    assert evaluation == {"evaluation/test_full.json", "evaluation/test_full.csv"}
    assert list((tmp_path / "out" / "mlartifacts").rglob("metrics.json"))
    assert stray_files(empty_cwd) == []  # train and evaluate wrote only under their output folders


@pytest.mark.faults
def test_killed_worker_resumes_and_matches_a_clean_run(
    ray_session, worker_faults, tiny_dir, tmp_path, mlflow_uri, capsys
):
    marker = tmp_path / "killed.txt"
    faulty = _cfg(tiny_dir, tmp_path, mlflow_uri, max_failures=1)
    request = request_kill(worker_faults, epoch=2, marker=marker)
    try:
        faulty_result = fit(check_training(faulty.checked()))
    finally:
        request.unlink()
    assert marker.exists()  # the worker really died in epoch 2, and the run went on from epoch 1's checkpoint
    assert _epochs_in_mlflow(mlflow_uri, faulty_result.run_id) == [1, 2, 3]
    console = capsys.readouterr().out.splitlines()
    printed = [line.split(":")[0] for line in console if line.startswith("epoch ")]
    assert printed == ["epoch 1/3", "epoch 2/3", "epoch 3/3"]  # Ray Train's reports: the retry repeats none
    clean = _cfg(tiny_dir, tmp_path, mlflow_uri, run_name="clean", storage_path=str(tmp_path / "clean"))
    clean_result = fit(check_training(clean.checked()))
    assert clean_result.run_id != faulty_result.run_id
    assert clean_result.history == faulty_result.history  # same seed, 1 worker: identical metrics

    # the same run in this process, without Ray (`num_workers: 0`), trains the same numbers
    local = _cfg(tiny_dir, tmp_path, mlflow_uri, num_workers=0, run_name="local")
    local_result = fit(check_training(local.checked()))
    assert local_result.history == clean_result.history
