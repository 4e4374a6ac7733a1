"""`vse-ray compare`: runs fetched from a real sqlite MLflow store, sorted and aligned."""

from __future__ import annotations

import pytest
from mlflow import MlflowClient
from typer.testing import CliRunner

from vse_ray.cli.main import app
from vse_ray.tune.mlflow_trials import PARENT_TAG
from vse_ray.tune.runs_table import fetch_runs, format_table, runs_table

RUNS = [  # name, lr, margin, metrics
    ("a", "0.0001", "0.2", {"rsum": 100.0, "R_at_1_i2t": 10.0}),
    ("b", "0.0003", "0.2", {"rsum": 250.5, "R_at_1_i2t": 30.0}),
    ("c", "0.0002", "0.2", {"rsum": 175.25}),
    ("d", "0.0005", "0.2", {}),
]


@pytest.fixture(scope="module")
def experiment(shared_mlflow_uri) -> tuple[str, str]:
    client = MlflowClient(shared_mlflow_uri)
    experiment_id = client.create_experiment("compare-table")
    parent = client.create_run(experiment_id, run_name="sweep").info.run_id
    client.set_terminated(parent)
    for name, lr, margin, metrics in RUNS:
        run_id = client.create_run(experiment_id, run_name=name, tags={PARENT_TAG: parent}).info.run_id
        client.log_param(run_id, "lr", lr)
        client.log_param(run_id, "loss.margin", margin)
        for key, value in metrics.items():
            client.log_metric(run_id, key, value)
        client.set_terminated(run_id, "KILLED" if name == "d" else "FINISHED")
    return "compare-table", parent


def _rows(table: str) -> list[list[str]]:
    return [line.split() for line in table.splitlines()]


def test_sorted_best_first_with_varying_params(experiment, shared_mlflow_uri):
    name, parent = experiment
    rows = _rows(runs_table(fetch_runs(shared_mlflow_uri, name, parent), "rsum"))
    assert rows[0] == ["run", "status", "run_id", "parent", "lr", "rsum", "R_at_1_i2t"]
    assert [r[0] for r in rows[2:]] == ["b", "c", "a", "d"]  # missing metric last; loss.margin is constant
    assert rows[2][1:2] == ["FINISHED"] and rows[2][3] == parent[:8]
    assert rows[2][4:] == ["0.0003", "250.5", "30"]
    assert rows[5][4:] == ["0.0005", "-", "-"]


def test_min_mode_limit_and_all_runs(experiment, shared_mlflow_uri):
    name, _ = experiment
    runs = fetch_runs(shared_mlflow_uri, name)
    assert len(runs) == len(RUNS) + 1  # the parent too
    rows = _rows(runs_table(runs, "R_at_1_i2t", mode="min", limit=2))
    assert [r[0] for r in rows[2:]] == ["a", "b"]


def test_errors(experiment, shared_mlflow_uri):
    with pytest.raises(ValueError, match="experiment 'nope' not found"):
        fetch_runs(shared_mlflow_uri, "nope")
    with pytest.raises(ValueError, match="mode must be"):
        runs_table([], mode="best")


def test_format_table_aligns_columns():
    text = format_table(["a", "long header"], [["xxxx", "1"], ["y", "22"]])
    lines = text.splitlines()
    assert lines == ["a     long header", "----  -----------", "xxxx  1", "y     22"]


def test_compare_command(experiment, shared_mlflow_uri):
    name, _ = experiment
    result = CliRunner().invoke(app, ["compare", "--experiment", name, "--tracking-uri", shared_mlflow_uri])
    assert result.exit_code == 0, result.output
    assert [r[0] for r in _rows(result.output)[2:6]] == ["b", "c", "a", "d"]
    bad = CliRunner().invoke(app, ["compare", "--experiment", "nope", "--tracking-uri", shared_mlflow_uri])
    assert bad.exit_code != 0 and "not found" in bad.output
