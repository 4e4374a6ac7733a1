"""`vse-ray compare`: runs fetched from a real sqlite MLflow store, sorted, filtered and formatted."""

from __future__ import annotations

import csv
import io
import json

import pytest
from mlflow import MlflowClient
from typer.testing import CliRunner

from vse_ray.cli.main import app
from vse_ray.reporting import metric_number
from vse_ray.tune.mlflow_trials import PARENT_TAG
from vse_ray.tune.runs_table import fetch_runs, runs_table

RUNS = [  # name, lr, data_dir (same for all), metrics
    ("a", "0.0001", {"val/rsum": 100.0, "val/R_at_1_i2t": 10.0, "val/medr_i2t": 4.0}),
    ("b", "0.0003", {"val/rsum": 250.5, "val/R_at_1_i2t": 30.0, "val/medr_i2t": 2.0}),
    ("c", "0.0002", {"val/rsum": 175.25}),
    ("d", "0.0005", {}),
]
LONG_DIR = "/data/" + "flickr30k_precomputed_" * 6


@pytest.fixture(scope="module")
def experiment(shared_mlflow_uri) -> tuple[str, str]:
    """A sweep parent run holding its best trial's copy (``best.*``, ``best_*``) and four trials."""
    client = MlflowClient(shared_mlflow_uri)
    experiment_id = client.create_experiment("compare-table")
    parent = client.create_run(experiment_id, run_name="sweep").info.run_id
    client.log_param(parent, "sweep.space", "space.yaml")
    for key, value in {"best.lr": "0.0003", "best.data_dir": LONG_DIR}.items():
        client.set_tag(parent, key, value)
    client.log_metric(parent, "best_val/rsum", 250.5)
    client.log_metric(parent, "best_val/R_at_1_i2t", 30.0)
    client.set_terminated(parent)
    for name, lr, metrics in RUNS:
        run_id = client.create_run(experiment_id, run_name=name, tags={PARENT_TAG: parent}).info.run_id
        client.log_param(run_id, "lr", lr)
        client.log_param(run_id, "data_dir", LONG_DIR)
        for key, value in metrics.items():
            client.log_metric(run_id, key, value)
        client.set_terminated(run_id, "KILLED" if name == "d" else "FINISHED")
    return "compare-table", parent


def _json(table: str) -> list[dict]:
    return json.loads(table)


def test_trials_sorted_best_first_with_differing_params(experiment, shared_mlflow_uri):
    name, parent = experiment
    rows = _json(runs_table(fetch_runs(shared_mlflow_uri, name, parent), "val/rsum", fmt="json"))
    assert [r["run"] for r in rows] == ["b", "c", "a", "d"]  # missing metric last
    assert list(rows[0]) == ["run", "status", "run_id", "parent_run_id", "lr", "val/rsum", "val/R_at_1_i2t"]
    assert rows[0]["status"] == "FINISHED" and rows[0]["parent_run_id"] == parent
    assert (rows[0]["lr"], rows[0]["val/rsum"], rows[0]["val/R_at_1_i2t"]) == (0.0003, 250.5, 30.0)
    assert (rows[3]["status"], rows[3]["val/rsum"], rows[3]["val/R_at_1_i2t"]) == ("KILLED", None, None)


def test_parent_shown_as_its_best_trial(experiment, shared_mlflow_uri):
    name, _ = experiment
    runs = fetch_runs(shared_mlflow_uri, name)
    rows = _json(runs_table(runs, "val/rsum", fmt="json"))
    assert [r["run"] for r in rows] == ["sweep (best)", "b", "c", "a", "d"]  # ties: the sweep first
    assert rows[0]["lr"] == rows[1]["lr"] and rows[0]["val/rsum"] == rows[1]["val/rsum"] == 250.5
    assert "data_dir" not in rows[0] and "sweep.space" not in rows[0]  # same everywhere / the sweep's own
    every = _json(runs_table(runs, params="all", fmt="json"))
    assert {"data_dir", "lr", "sweep.space"} <= set(every[0]) and every[1]["data_dir"] == LONG_DIR


def test_text_fits_the_width_and_shortens_long_values(experiment, shared_mlflow_uri):
    name, _ = experiment
    runs = fetch_runs(shared_mlflow_uri, name)
    text = runs_table(runs, "val/R_at_1_i2t", params="all", metrics=["val/medr_i2t"])
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 120
    assert lines[0].split()[:2] == ["run", "status"] and "R@1 i2t" in lines[0] and "medr i2t" in lines[0]
    assert "/data/flickr" in lines[2] and "…" in lines[2] and LONG_DIR not in text
    min_rows = _json(runs_table(runs, "val/R_at_1_i2t", mode="min", limit=2, params="none", fmt="json"))
    assert [r["run"] for r in min_rows] == ["a", "sweep (best)"] and "lr" not in min_rows[0]
    top = _json(runs_table(runs, limit=2, fmt="json"))  # the top two have the same lr: still shown
    assert [(r["run"], r["lr"]) for r in top] == [("sweep (best)", 0.0003), ("b", 0.0003)]


def test_csv_markdown_and_json_give_the_same_numbers(experiment, shared_mlflow_uri):
    name, parent = experiment
    runs = fetch_runs(shared_mlflow_uri, name, parent)
    as_json = _json(runs_table(runs, fmt="json"))
    as_csv = list(csv.DictReader(io.StringIO(runs_table(runs, fmt="csv"))))
    lines = runs_table(runs, fmt="markdown").splitlines()
    header = [c.strip() for c in lines[0].strip("| ").split(" | ")]
    assert header == ["run", "status", "lr", "rsum", "R@1 i2t"] and lines[1].startswith(
        "| --- | --- | ---: |"
    )
    markdown = [
        dict(zip(header, (c.strip() for c in line.strip("| ").split(" | ")), strict=True))
        for line in lines[2:]
    ]
    for js, cs, md in zip(as_json, as_csv, markdown, strict=True):
        assert js["run"] == cs["run"] == md["run"]
        assert js["lr"] == float(cs["lr"]) == float(md["lr"])
        for key, title in (("val/rsum", "rsum"), ("val/R_at_1_i2t", "R@1 i2t")):
            if js[key] is None:
                assert (cs[key], md[title]) == ("", "-")
            else:
                assert js[key] == float(cs[key]) and md[title] == metric_number(js[key])


def test_errors(experiment, shared_mlflow_uri):
    name, _ = experiment
    runs = fetch_runs(shared_mlflow_uri, name)
    with pytest.raises(ValueError, match="experiment 'nope' not found"):
        fetch_runs(shared_mlflow_uri, "nope")
    with pytest.raises(ValueError, match="mode must be"):
        runs_table([], mode="best")
    with pytest.raises(
        ValueError, match="no run has metric 'val/R_at_2_i2t'; metrics there: val/R_at_1_i2t, val/medr"
    ):
        runs_table(runs, metrics=["val/R_at_2_i2t"])
    with pytest.raises(
        ValueError, match="no run has param 'margin'; params there: data_dir, lr, sweep.space"
    ):
        runs_table(runs, params="lr,margin")
    with pytest.raises(ValueError, match="format must be one of"):
        runs_table(runs, fmt="html")


def test_compare_command(experiment, shared_mlflow_uri):
    name, _ = experiment
    base = ["compare", "--experiment", name, "--tracking-uri", shared_mlflow_uri]
    result = CliRunner().invoke(app, base)
    assert result.exit_code == 0, result.output
    assert [line.split()[0] for line in result.output.splitlines()[2:7]] == ["sweep", "b", "c", "a", "d"]
    md = CliRunner().invoke(
        app, [*base, "--format", "markdown", "--columns", "val/medr_i2t", "--params", "none"]
    )
    assert md.output.splitlines()[0] == "| run | status | rsum | R@1 i2t | medr i2t |"
    bad = CliRunner().invoke(app, ["compare", "--experiment", "nope", "--tracking-uri", shared_mlflow_uri])
    assert bad.exit_code != 0 and "not found" in bad.output
    bad_format = CliRunner().invoke(app, [*base, "--format", "html"])
    assert bad_format.exit_code != 0 and "format must be one of" in bad_format.output
