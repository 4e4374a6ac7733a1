"""`vse-ray demo` at a tiny size: generate → precompute → shared warm-up → two losses as Tune trials →
evaluate → table."""

from __future__ import annotations

import pytest
from mlflow import MlflowClient

from tests.conftest import stray_files
from vse_ray.demo import DemoSettings, run_demo
from vse_ray.tune.mlflow_trials import PARENT_TAG

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def test_tiny_demo_end_to_end(ray_session, tmp_path, capsys, empty_cwd):
    settings = DemoSettings(
        output_dir=str(tmp_path / "demo"),
        losses=("vsepp", "sam"),
        n_train=60,
        n_val=20,
        n_test=20,
        epochs=2,
        warmup_epochs=1,
        batch_size=32,
        word_dim=16,
        embed_dim=32,
    )
    result = run_demo(settings)
    assert set(result.test_metrics) == {"vsepp", "sam"}
    assert all(0 <= m["R_at_10_t2i"] <= 100 and "CS_at_10_i2t" in m for m in result.test_metrics.values())
    client = MlflowClient(result.tracking_uri)
    for loss, run_id in result.run_ids.items():
        run = client.get_run(run_id)
        assert run.data.params["loss"] == loss and run.data.tags[PARENT_TAG] == result.parent_run_id
        # the shared warm-up is epoch 1; each loss logs its own epoch 2 only
        assert [m.step for m in client.get_metric_history(run_id, "rsum")] == [2]
        assert "test_rsum" in run.data.metrics
    out = capsys.readouterr().out
    assert "(chance)" in out and "mlflow ui --backend-store-uri sqlite:///" in out
    assert f"#/experiments/{result.experiment_id}/runs" in out
    assert stray_files(empty_cwd) == []  # precompute, trainings, evaluation: all under --output-dir
