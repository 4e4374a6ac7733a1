"""MLflow tracking on a throwaway sqlite store: URIs, run reuse, exactly-once epochs, best run."""

from __future__ import annotations

import json
import os
import shlex
import sys
from importlib.metadata import entry_points
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
from vse_ray.tracking.uri import CREDENTIAL_ENV, PG_PASSWORD_ENV, PLUGIN_GROUP, STORE_SCHEMES, redact_uri
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
    # a line never ends "MLflow run <id>: " with nothing after it
    assert ui_command("http://u:p@h:5000") == "served by the tracking server http://h:5000"
    spaced = ui_command("sqlite:////my runs/it's/mlflow.db")  # pasted into a shell, one argument
    assert shlex.split(spaced)[:4] == [
        "mlflow",
        "ui",
        "--backend-store-uri",
        "sqlite:////my runs/it's/mlflow.db",
    ]


def test_the_schemes_accepted_are_those_mlflow_opens():
    from mlflow.tracking._tracking_service.utils import _tracking_store_registry

    assert set(STORE_SCHEMES) == set(_tracking_store_registry._registry) - {""}
    assert not list(entry_points(group=PLUGIN_GROUP))  # none installed here: a plugin's scheme is added


def test_a_postgresql_password_reaches_the_driver_and_no_uri(tmp_path, monkeypatch):
    pytest.importorskip("psycopg", reason="the postgres extra is not installed: pip install -e '.[postgres]'")
    monkeypatch.delenv(PG_PASSWORD_ENV, raising=False)
    secret = "postgresql://alice:S3cr%40t@db.example:5432/mlflow"
    cfg = TrainConfig(data_dir=str(tmp_path / "coco"), tracking_uri=secret).resolved()
    assert cfg.tracking_uri.endswith("://alice@db.example:5432/mlflow")
    assert cfg.tracking_uri.startswith("postgresql")  # with the driver installed (psycopg or psycopg2)
    assert "S3cr" not in json.dumps(cfg.to_dict())
    assert os.environ[PG_PASSWORD_ENV] == "S3cr@t"  # libpq reads it, percent-decoded


def test_a_database_uri_without_its_driver_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # an import of psycopg fails, as when not installed
    monkeypatch.setitem(sys.modules, "psycopg2", None)
    with pytest.raises(ValueError) as refused:
        resolve_tracking_uri("postgresql+psycopg://u:pw@h/db", "unused")
    assert str(refused.value).startswith("tracking URI postgresql+psycopg://u@h/db: its database driver is")
    assert str(refused.value).endswith("pip install 'vse_ray[postgres]'") and ":pw@" not in str(refused.value)
    with pytest.raises(ValueError, match=r"mysql://u@h/db: its database driver is not installed"):
        resolve_tracking_uri("mysql://u:pw@h/db", "unused")  # no MySQL driver here


def test_run_reuse_params_and_exactly_once_epochs(mlflow_uri, tmp_path):
    exp = get_or_create_experiment("tiny", mlflow_uri, tmp_path)
    assert get_or_create_experiment("tiny", mlflow_uri, tmp_path) == exp
    run = get_or_create_run(exp, "tiny-vsepp-s0", mlflow_uri)
    assert get_or_create_run(exp, "tiny-vsepp-s0", mlflow_uri) == run
    assert get_or_create_run(exp, "tiny-sam-s0", mlflow_uri) != run
    log_params_flat({f"p{i}": i for i in range(150)}, run, mlflow_uri)
    history = [
        {
            "epoch": e,
            "train_loss": 1.0 / e,
            "rsum": 10.0 * e,
            "R_at_1_i2t": e,
            "NCS_at_10_i2t": 0.1,
            "note": "x",
        }
        for e in (1, 2, 3)
    ]
    assert log_epoch_metrics(history[:2], run, mlflow_uri) == 2
    assert log_epoch_metrics(history, run, mlflow_uri) == 1  # a retried worker re-sends epochs 1-2
    client = MlflowClient(mlflow_uri)
    assert sorted(m.step for m in client.get_metric_history(run, "val/rsum")) == [1, 2, 3]
    assert sorted(m.value for m in client.get_metric_history(run, "val/R_at_1_i2t")) == [1, 2, 3]
    assert set(client.get_run(run).data.metrics) == {"train/loss", "val/rsum", "val/R_at_1_i2t"}
    assert len(client.get_run(run).data.params) == 150


def test_metric_keys_group_by_split_and_source():
    from vse_ray.tracking import metric_keys as keys

    assert keys.mlflow_key("rsum", "test") == "test/rsum"
    assert keys.mlflow_key("CS_at_100_i2t_scene", "test") == "test_scene/CS_at_100_i2t"
    assert keys.mlflow_key("CS_at_100_i2t", "test", "coco1k") == "test_coco1k/CS_at_100_i2t"
    for name in ("test/rsum", "test_scene/CS_at_100_i2t", "test_coco1k_scene/tau_i2t"):
        split, _, rest = name.partition("/")
        protocol = "coco1k" if "coco1k" in split else "full"
        key = keys.evaluation_key(name, "test", protocol)
        assert key is not None and keys.mlflow_key(key, "test", protocol) == name
    assert keys.evaluation_key("val/rsum", "test") is None and keys.evaluation_key("rsum", "test") is None
    evaluation = {"rsum": 1.0, "R_at_5_i2t": 2.0, "CS_at_1000_i2t_scene": float("nan"), "CS_at_100_i2t": 0.5}
    assert keys.headline(evaluation, "test") == {"test/rsum": 1.0, "test/CS_at_100_i2t": 0.5}
    assert keys.epoch_metrics({"epoch": 2, "train_loss": 0.5, "lr": 1e-3, "rsum": 7.0}) == {
        "train/loss": 0.5,
        "train/lr": 1e-3,
        "val/rsum": 7.0,
    }


def test_recorded_checkpoint_and_saved_view(mlflow_uri, tmp_path):
    from vse_ray.tracking.recorder import RunRecorder
    from vse_ray.tracking.views import SHARE_TAG_PREFIX, comparison_view, save_view, view_url

    exp = get_or_create_experiment("recorded", mlflow_uri, tmp_path)
    recorder = RunRecorder.open(exp, "r", mlflow_uri, {"lr": 0.1}, {"vse_ray.study.row": "bcls"})
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "model.pt").write_bytes(b"weights")
    assert not recorder.has_checkpoint()
    history = [{"epoch": 1, "rsum": 5.0, "NCS_at_10_i2t": 0.2}, {"epoch": 2, "rsum": 7.0}]
    recorder.record_checkpoint(tmp_path / "ckpt", history[1], history, {"deviations": ["x"]})
    client = MlflowClient(mlflow_uri)
    assert recorder.has_checkpoint() and client.get_run(recorder.run_id).data.metrics == {
        "val/best_rsum": 7.0,
        "val/best_epoch": 2.0,
    }
    files = {a.path for a in client.list_artifacts(recorder.run_id)}
    assert files == {"checkpoint", "config.json", "deviations.md", "metrics.json", "metrics.csv"}
    state = comparison_view("tags.`row` LIKE '%'", ["test/rsum"], "test/rsum", ["lr"], "row", ["bcls"])
    assert state["selectedColumns"] == ["metrics.`test/rsum`", "params.`lr`"]
    assert state["groupBy"]["groupByKeys"] == [{"mode": "tag", "groupByData": "row"}]
    assert state["groupsExpanded"] == {"tag.row.bcls": False}  # one row per loss, its seeds folded
    key = save_view(mlflow_uri, exp, state)
    assert json.loads(client.get_experiment(exp).tags[SHARE_TAG_PREFIX + key]) == state
    assert view_url(mlflow_uri, exp, key, chart=True) == (
        f"http://127.0.0.1:5000/#/experiments/{exp}/runs?viewStateShareKey={key}&compareRunsMode=CHART"
    )


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
        log_epoch_metrics([{"epoch": 1, "train_loss": 1.0, "rsum": rsum}], runs[name], mlflow_uri)
    assert get_best_run("best", tracking_uri=mlflow_uri).info.run_id == runs["b"]


def test_artifacts_land_under_the_output_folder(mlflow_uri, tmp_path, empty_cwd):
    out = tmp_path / "out"
    run = get_or_create_run(get_or_create_experiment("arts", mlflow_uri, out), "r", mlflow_uri)
    MlflowClient(mlflow_uri).log_dict(run, {"a": 1}, "doc.json")
    assert list((out / "mlartifacts").rglob("doc.json"))
    assert stray_files(empty_cwd) == []
