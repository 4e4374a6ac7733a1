"""A 2-trial sweep on the shared Ray instance: interrupted after one trial, refused with another config,
resumed, tracked in MLflow."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from mlflow import MlflowClient
from typer.testing import CliRunner

from tests.conftest import stray_files
from tests.support.tiny_store import write_tiny_store
from vse_ray.cli.main import app
from vse_ray.tune.mlflow_trials import PARENT_TAG, STOP_TAG
from vse_ray.tune.sweep import check_sweep, run_sweep
from vse_ray.tune.sweep_config import SweepConfig

SPACE = """
loss: lseh
params:
  lr: {loguniform: [1.0e-4, 1.0e-2]}
  loss_params:
    margin: {uniform: [0.16, 0.21]}
"""
TINY_TRAINING = {
    "epochs": 2,
    "batch_size": 16,
    "word_dim": 16,
    "embed_dim": 32,
    "cs_ks": [5, 10],
    "ncs_ks": [1, 5],
}


@pytest.mark.ray
def test_sweep_interrupt_resume_and_mlflow(ray_session, tmp_path, mlflow_uri, capsys, empty_cwd):
    space = tmp_path / "space.yaml"
    space.write_text(SPACE)
    cfg = SweepConfig(
        space=str(space),
        data_dir=str(write_tiny_store(tmp_path / "store")),
        train=TINY_TRAINING,
        num_samples=2,
        scheduler="asha",
        max_concurrent=1,
        stop_after_trials=1,
        name="tiny-lseh",
        output_dir=str(tmp_path / "out"),
        tracking_uri=mlflow_uri,
        experiment="sweep-test",
    )
    first = run_sweep(check_sweep(cfg))
    client = MlflowClient(mlflow_uri)
    assert not first.finished and first.num_trials == 2
    assert client.get_run(first.parent_run_id).info.status == "KILLED"
    assert "RUNNING" not in {r.info.status for r in client.search_runs([first.experiment_id])}
    with pytest.raises(
        ValueError, match=r"started with another config \(num_samples 2 -> 3, train.epochs 2 -> 3\)"
    ):
        run_sweep(check_sweep(dataclasses.replace(cfg, num_samples=3, train={**TINY_TRAINING, "epochs": 3})))

    second = run_sweep(
        check_sweep(dataclasses.replace(cfg, stop_after_trials=0))
    )  # Tuner.restore(resume_unfinished=True)
    assert second.finished and second.num_trials == 2 and second.num_errors == 0
    assert second.parent_run_id == first.parent_run_id and second.path == first.path

    parent = client.get_run(second.parent_run_id)
    assert (parent.info.status, parent.data.tags[STOP_TAG]) == ("FINISHED", "completed")
    trials = client.search_runs([second.experiment_id], f"tags.`{PARENT_TAG}` = '{second.parent_run_id}'")
    assert len(trials) == 2 and len({t.data.params["lr"] for t in trials}) == 2
    for run in trials:
        epochs = sorted(m.step for m in client.get_metric_history(run.info.run_id, "val/rsum"))
        assert epochs in ([1, 2], [1])  # ASHA may stop the second trial after its first epoch
        expected = ("FINISHED", "completed") if epochs == [1, 2] else ("KILLED", "early_stopped")
        assert (run.info.status, run.data.tags[STOP_TAG]) == expected
        assert run.data.params["loss"] == "lseh" and 0.16 <= float(run.data.params["loss.margin"]) <= 0.21

    best_rsum = max(m.value for t in trials for m in client.get_metric_history(t.info.run_id, "val/rsum"))
    assert parent.data.metrics["best_val/rsum"] == pytest.approx(best_rsum)
    assert second.best_metrics["rsum"] == pytest.approx(best_rsum)
    best_run = client.get_run(second.best_run_id)
    assert parent.data.tags["best.lr"] == best_run.data.params["lr"]
    assert Path(second.best_checkpoint, "model.pt").is_file()
    out = capsys.readouterr().out
    assert f"Best trial {second.best_trial_id}: rsum" in out and "#/experiments/" in out
    assert stray_files(empty_cwd) == []
    last = out[out.rindex("Sweep tiny-lseh: 2/2 trials ended") :].splitlines()
    assert last[3].split() == ["loss", "loss.margin", "lr"]  # the best config: the searched params only
    assert last[7].split() == ["R@1", "R@5", "R@10"] and last[9].split()[0] == "i2t"  # CS@100 etc: not logged
    report = json.loads(Path(second.report).read_text())
    assert report["best_metrics"]["rsum"] == pytest.approx(best_rsum) and report["best_config"]["epochs"] == 2

    for run in trials:  # every ended trial keeps its best checkpoint, so `evaluate --run` works on it
        uploaded = [a.path for a in client.list_artifacts(run.info.run_id, "checkpoint")]
        assert uploaded == ["checkpoint/model.pt"]
    evaluate = ["evaluate", "--run", second.best_run_id, "--tracking-uri", mlflow_uri]
    evaluated = CliRunner().invoke(app, [*evaluate, "--output-dir", str(tmp_path)])
    assert evaluated.exit_code == 0, evaluated.output
    assert "rsum" in evaluated.output and f"{second.best_run_id}_test_full.json" in evaluated.output
    assert "test/rsum" in client.get_run(second.best_run_id).data.metrics  # the recorder's test group

    compare = CliRunner().invoke(app, ["compare", "--experiment", "sweep-test", "--tracking-uri", mlflow_uri])
    lines = compare.output.splitlines()
    assert compare.exit_code == 0 and max(len(line) for line in lines) <= 120
    assert lines[0].split() == ["run", "status", "loss.margin", "lr", "rsum", "R@1", "i2t", "R@1", "t2i"]
    assert (
        lines[2].startswith("tiny-lseh (best)") and len(lines) == 5
    )  # the parent as its best trial, 2 trials
    assert stray_files(empty_cwd) == []
