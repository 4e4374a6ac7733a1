"""`vse-ray demo` at a tiny size: embedded data → precompute → shared warm-up → a loss and its
shuffled-relevance control against VSE++ as Tune trials → test → table."""

from __future__ import annotations

import pytest
from mlflow import MlflowClient

from tests.conftest import stray_files
from vse_ray.demo import demo_study, run_demo
from vse_ray.demo.evidence import EVIDENCE_LINE
from vse_ray.tune.mlflow_trials import PARENT_TAG

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def test_tiny_demo_end_to_end(ray_session, tmp_path, capsys, empty_cwd):
    spec = demo_study(
        ["vsepp", "bcls"],
        train_images=60,
        val_images=20,
        test_images=20,
        epochs=1,
        warmup_epochs=1,
        batch_size=32,
        word_dim=16,
        embed_dim=32,
        concurrent=2,
    )
    result = run_demo(spec, str(tmp_path / "demo"))
    rows = {c.row for c in result.cells}
    assert rows == {"vsepp", "bcls", "bcls-shuffled"}
    client = MlflowClient(result.tracking_uri)
    runs = client.search_runs([result.experiment_id], f"tags.`{PARENT_TAG}` = '{result.parent_run_id}'")
    assert sorted(r.info.run_name for r in runs) == ["bcls-s0", "bcls-shuffled-s0", "vsepp-s0", "warmup-s0"]
    for run in runs:
        if run.info.run_name != "warmup-s0":  # the shared warm-up is epoch 1; each loss logs its epoch 2
            assert [m.step for m in client.get_metric_history(run.info.run_id, "val/rsum")] == [2]
            assert 0 <= run.data.metrics["test/R_at_1_t2i"] <= 100
            assert "test/R_at_10_t2i" in run.data.metrics  # a study's keys (STUDY_KEYS)
            assert "test/medr_t2i" not in run.data.metrics  # the rest: in the report artifact, not a metric
            report = client.list_artifacts(run.info.run_id, "evaluation")
            assert {a.path for a in report} == {"evaluation/test_full.json", "evaluation/test_full.csv"}
            checkpoint = client.list_artifacts(run.info.run_id, "checkpoint")  # for `evaluate --run`
            assert [a.path for a in checkpoint] == ["checkpoint/model.pt"]
    out = capsys.readouterr().out
    table = out[out.index("\nrun ") + 1 : out.index("\nOne seed; ")].splitlines()
    # a "≠ study" line follows a Δ whose sign the study at strength contradicts (`study_evidence`)
    names = [line.split()[0] for line in table[2:]]
    assert table[0].split()[:2] == ["run", "rsum"] and [n for n in names if n != "≠"] == [
        "vsepp",
        "bcls",
        "Δ",
        "bcls-shuffled",
        "Δ",
    ]
    assert all(names[i - 1] == "Δ" for i, n in enumerate(names) if n == "≠")
    assert ("≠" in names) == ("≠ study: the Δ above has the opposite sign" in out)
    assert (
        max(map(len, table)) <= 120
        and f"Full table (every metric, 95 % intervals): {result.files['markdown']}" in out
    )
    assert "Chance level" in out and "mlflow ui --backend-store-uri sqlite:///" in out
    assert f"{EVIDENCE_LINE}\nFull table (every metric" in out  # the table's last line: where the evidence is
    assert f"#/experiments/{result.experiment_id}/runs?viewStateShareKey=" in out and "bcls-shuffled" in out
    assert result.runs_url in out and result.charts_url.endswith("&compareRunsMode=CHART")
    written = {p.name for p in (tmp_path / "demo").iterdir()}
    # .vse_ray.lock: the MLflow store's creation lock (tracking/lifecycle.py), held by one command at a time
    assert written == {".vse_ray.lock", "data", "logs", "mlartifacts", "mlflow.db", "ray_results", "studies"}
    assert stray_files(empty_cwd) == []  # everything under --output-dir
