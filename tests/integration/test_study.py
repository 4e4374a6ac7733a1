"""A tiny study end to end on the shared Ray instance: warm-up per seed, losses and a control as Tune trials,
test scores, summary in MLflow, and `--summary` reading it back."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs

import pytest
from mlflow import MlflowClient

from tests.conftest import stray_files
from tests.support.tiny_store import write_tiny_store
from vse_ray.evaluation.evaluate import evaluate_run
from vse_ray.study import parse_study, run_study, study_summary
from vse_ray.study.summary import ROW_TAG, collect_runs, summarize, summary_csv
from vse_ray.tracking.views import RUN_COLOR_TAG, SHARE_TAG_PREFIX, SHARE_URL_PARAM
from vse_ray.tune.mlflow_trials import PARENT_TAG

pytestmark = [pytest.mark.ray]

STUDY = """
name: tiny
baseline: vsepp
seeds: 2
warmup_epochs: 1
epochs: 1
data: {{data_dir: {data_dir}}}
train: {{batch_size: 16, word_dim: 16, embed_dim: 32, cs_ks: [5, 10], ncs_ks: [1, 5]}}
losses:
  vsepp: {{}}
  ladder: {{thresholds: [0.5]}}
controls:
  shuffled: [ladder]
resources: {{cpus_per_trial: 2}}  # two trial processes, each reused for three trials
"""


def test_tiny_study_end_to_end(ray_session, tmp_path, capsys, empty_cwd):
    data_dir = write_tiny_store(tmp_path / "store")
    spec = parse_study(STUDY.format(data_dir=data_dir), "tiny.yaml")
    result = run_study(spec, tmp_path / "out")

    client = MlflowClient(result.tracking_uri)
    children = client.search_runs([result.experiment_id], f"tags.`{PARENT_TAG}` = '{result.parent_run_id}'")
    names = sorted(r.info.run_name for r in children)
    assert names == sorted(
        ["warmup-s0", "warmup-s1"]
        + [f"{v}-s{s}" for v in ("vsepp", "ladder", "ladder-shuffled") for s in (0, 1)]
    )
    for run in children:
        epochs = [m.step for m in client.get_metric_history(run.info.run_id, "val/rsum")]
        if run.info.run_name.startswith("warmup"):
            assert epochs == [1]
            continue
        assert epochs == [2]  # every loss starts from its seed's warm-up (epoch 1) and trains epoch 2
        assert "test/rsum" in run.data.metrics and run.data.params["warmup_epochs"] == "1"
        assert run.data.tags[RUN_COLOR_TAG].startswith("#")
        assert run.data.params["shuffle_relevance"] == str(run.info.run_name.startswith("ladder-shuffled"))

    printed = capsys.readouterr().out
    rows = {(c.row, c.metric): c for c in result.cells}
    assert rows[("vsepp", "rsum")].diff is None and rows[("vsepp", "rsum")].value.n == 2
    ladder = rows[("ladder", "rsum")]
    assert ladder.diff is not None and ladder.diff.n == 2
    view = parse_qs(result.runs_url.partition("?")[2])[SHARE_URL_PARAM][0]
    state = json.loads(client.get_experiment(result.experiment_id).tags[SHARE_TAG_PREFIX + view])
    shown = client.search_runs([result.experiment_id], state["searchFilter"])
    assert sorted(r.info.run_name for r in shown) == [n for n in names if not n.startswith("warmup")]
    assert state["groupBy"]["groupByKeys"] == [{"mode": "tag", "groupByData": ROW_TAG}]  # seeds averaged
    assert "metrics.`test/rsum`" in state["selectedColumns"] and result.runs_url in printed
    artifacts = {a.path for a in client.list_artifacts(result.parent_run_id, "summary")}
    assert artifacts == {"summary/summary.csv", "summary/summary.md"}
    assert [a.path for a in client.list_artifacts(result.parent_run_id, "plots")] == ["plots/tradeoff.png"]
    assert set(result.seconds) >= {"data", "warm-up", "train", "test", "total"}

    again = study_summary(spec, tmp_path / "out")
    assert again == result.table and again in printed
    # the table came from the stages' own numbers; read back from MLflow they are the same
    read_back = collect_runs(result.tracking_uri, result.experiment_id, result.parent_run_id)
    rows = [v.name for v in spec.variants()]
    written = Path(result.files["csv"]).read_text().splitlines()
    assert summary_csv(summarize(read_back, spec.baseline, rows)).splitlines() == written

    snapshots = (tmp_path / "out").glob("mlartifacts/*/artifacts/checkpoint/*")
    uploaded = {p: p.stat().st_mtime_ns for p in snapshots}
    assert len(uploaded) == 6  # one best snapshot per loss run
    rerun = run_study(spec, tmp_path / "out")  # resumes: nothing trained or tested twice
    assert {p: p.stat().st_mtime_ns for p in uploaded} == uploaded  # nor uploaded again
    assert rerun.table == result.table and rerun.parent_run_id == result.parent_run_id
    for run in children:
        assert len(client.get_metric_history(run.info.run_id, "val/rsum")) == 1
        if not run.info.run_name.startswith("warmup"):
            assert len(client.get_metric_history(run.info.run_id, "test/rsum")) == 1
    assert stray_files(empty_cwd) == []  # everything under the output folder

    tested = next(run for run in children if run.info.run_name == "ladder-s1")
    report = evaluate_run(tested.info.run_id, tracking_uri=result.tracking_uri, output_dir=tmp_path / "out")
    assert report.run_id == tested.info.run_id and report.metrics["rsum"] == pytest.approx(
        tested.data.metrics["test/rsum"], rel=1e-5
    )


def test_warmups_share_the_cpus_they_would_leave_idle(ray_session):
    import ray

    from vse_ray.study.warmup import warmup_cpus

    cpus = float(ray.cluster_resources()["CPU"])  # one node here
    assert warmup_cpus({"cpus_per_trial": 1}, 1) == cpus
    assert warmup_cpus({"cpus_per_trial": 1}, 2) == float(int(cpus // 2))
    assert warmup_cpus({"cpus_per_trial": 1}, int(cpus) * 3) == 1.0  # never below the study's own
    assert warmup_cpus({"cpus_per_trial": 1, "gpus_per_trial": 0.5}, 1) == 1.0  # GPU trials keep theirs
