"""MLflow tracking on a throwaway sqlite store: URIs, run reuse, exactly-once epochs, best run."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from mlflow import MlflowClient

from tests.conftest import stray_files
from vse_ray.tracking import (
    get_best_run,
    get_or_create_experiment,
    get_or_create_run,
    log_epoch_metrics,
    log_params_flat,
    resolve_tracking_uri,
    runs_table_url,
    ui_command,
)
from vse_ray.tracking.uri import CREDENTIAL_ENV, redact_uri
from vse_ray.train.config import TrainConfig


def test_resolve_tracking_uri(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert resolve_tracking_uri(None, tmp_path / "o") == f"sqlite:///{tmp_path / 'o' / 'mlflow.db'}"
    monkeypatch.chdir(tmp_path)
    assert resolve_tracking_uri("sqlite:///rel/x.db", "unused") == f"sqlite:///{tmp_path / 'rel' / 'x.db'}"
    assert resolve_tracking_uri("y.db", "unused") == f"sqlite:///{tmp_path / 'y.db'}"
    assert resolve_tracking_uri("http://host:5000", "unused") == "http://host:5000"
    assert Path(tmp_path / "o").is_dir()


def test_tracking_uri_defaults_to_the_environment_for_every_command(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://tracking.example:5000")
    assert resolve_tracking_uri(None, tmp_path) == "http://tracking.example:5000"
    cfg = TrainConfig(data_dir=str(tmp_path / "coco"), output_dir=str(tmp_path / "o")).resolved()
    assert cfg.tracking_uri == "http://tracking.example:5000"
    assert resolve_tracking_uri("y.db", tmp_path) == f"sqlite:///{Path.cwd() / 'y.db'}"  # the option wins


def test_credentials_of_a_tracking_uri_are_never_stored(tmp_path, monkeypatch):
    for name in ("MLFLOW_TRACKING_URI", *CREDENTIAL_ENV):
        monkeypatch.delenv(name, raising=False)
    secret = "http://alice:S3cr3tT0ken@tracking.example:5000/path"
    cfg = TrainConfig(data_dir=str(tmp_path / "coco"), tracking_uri=secret).resolved()
    assert cfg.tracking_uri == "http://tracking.example:5000/path"
    assert "S3cr3t" not in json.dumps(cfg.to_dict()) and "alice" not in json.dumps(cfg.to_dict())
    assert [os.environ[name] for name in CREDENTIAL_ENV] == ["alice", "S3cr3tT0ken"]
    assert redact_uri("s3://key:secret@bucket/x") == "s3://bucket/x"
    assert redact_uri("/plain/path") == "/plain/path"


def test_links():
    assert runs_table_url("sqlite:////a/mlflow.db", "3") == "http://127.0.0.1:5000/#/experiments/3/runs"
    assert runs_table_url("http://h:5000/", "3") == "http://h:5000/#/experiments/3/runs"
    assert ui_command("sqlite:////a/mlflow.db").startswith(
        "mlflow ui --backend-store-uri sqlite:////a/mlflow.db"
    )


def test_run_reuse_params_and_exactly_once_epochs(mlflow_uri, tmp_path):
    exp = get_or_create_experiment("tiny", mlflow_uri, tmp_path)
    assert get_or_create_experiment("tiny", mlflow_uri, tmp_path) == exp
    run = get_or_create_run(exp, "tiny-vsepp-s0", mlflow_uri)
    assert get_or_create_run(exp, "tiny-vsepp-s0", mlflow_uri) == run
    assert get_or_create_run(exp, "tiny-sam-s0", mlflow_uri) != run
    log_params_flat({f"p{i}": i for i in range(150)}, run, mlflow_uri)
    history = [{"epoch": e, "rsum": 10.0 * e, "R_at_1_i2t": e, "note": "x"} for e in (1, 2, 3)]
    assert log_epoch_metrics(history[:2], run, mlflow_uri) == 2
    assert log_epoch_metrics(history, run, mlflow_uri) == 1  # a retried worker re-sends epochs 1-2
    client = MlflowClient(mlflow_uri)
    assert sorted(m.step for m in client.get_metric_history(run, "rsum")) == [1, 2, 3]
    assert sorted(m.value for m in client.get_metric_history(run, "R_at_1_i2t")) == [1, 2, 3]
    assert len(client.get_run(run).data.params) == 150


def test_run_names_with_quotes_find_their_run(mlflow_uri, tmp_path):
    exp = get_or_create_experiment("quotes", mlflow_uri, tmp_path)
    for name in ("bob's run", 'say "hi"', "back\\slash"):
        run = get_or_create_run(exp, name, mlflow_uri)
        assert get_or_create_run(exp, name, mlflow_uri) == run
    with pytest.raises(ValueError, match="run_name: .* holds both ' and \""):
        get_or_create_run(exp, "both ' and \"", mlflow_uri)


def test_get_best_run(mlflow_uri, tmp_path):
    exp = get_or_create_experiment("best", mlflow_uri, tmp_path)
    runs = {name: get_or_create_run(exp, name, mlflow_uri) for name in ("a", "b", "c")}
    for name, rsum in (("a", 100.0), ("b", 250.0)):
        log_epoch_metrics([{"epoch": 1, "rsum": rsum}], runs[name], mlflow_uri)
    assert get_best_run("best", tracking_uri=mlflow_uri).info.run_id == runs["b"]


def test_artifacts_land_under_the_output_folder(mlflow_uri, tmp_path, empty_cwd):
    out = tmp_path / "out"
    run = get_or_create_run(get_or_create_experiment("arts", mlflow_uri, out), "r", mlflow_uri)
    MlflowClient(mlflow_uri).log_dict(run, {"a": 1}, "doc.json")
    assert list((out / "mlartifacts").rglob("doc.json"))
    assert stray_files(empty_cwd) == []
