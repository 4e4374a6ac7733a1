"""One run lifecycle: every command that writes a run claims it before Ray starts (no Ray started here).

A second sweep of a held name, a sweep rerun with another config and an absent tracking server are one line;
first commands on a new store do not race in MLflow's schema migration.
"""

from __future__ import annotations

import http.server
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from mlflow import MlflowClient

from tests.support.cli import one_error_line, run_cli
from tests.support.tiny_commands import study_file, sweep_args
from vse_ray.file_lock import FolderLock
from vse_ray.tracking.lifecycle import prepare_store_beside

ROOT = Path(__file__).resolve().parents[3]


def _ray_starts(*args, **kwargs):
    pytest.fail("Ray started: the command should have stopped before")


def _ctrl_c(*args, **kwargs):
    raise KeyboardInterrupt


@pytest.fixture()
def no_ray(monkeypatch):
    """Fail the test where a command would start Ray (a local instance or a sweep's Tune fit)."""
    monkeypatch.setattr("vse_ray.ray_session.ensure_ray", _ray_starts)
    monkeypatch.setattr("vse_ray.tune.sweep.fit_trials", _ray_starts)


def test_a_second_sweep_of_a_held_name_is_one_line(tiny_data_dir, tmp_path, no_ray):
    folder = tmp_path / "out" / "ray_results" / "tiny"
    with FolderLock(folder):
        result = run_cli(sweep_args(tiny_data_dir, tmp_path, "--num-samples", "1"))
    one_error_line(result, f"sweep 'tiny' ({folder}) is in use by PID {os.getpid()}", "--wait", "--name")


def test_a_second_study_in_one_output_folder_is_one_line(tiny_data_dir, tmp_path, no_ray):
    study = study_file(tiny_data_dir, tmp_path)
    folder = tmp_path / "out" / "studies" / "tiny"
    with FolderLock(folder):
        result = run_cli(["study", str(study), "--output-dir", str(tmp_path / "out")])
    one_error_line(result, f"study 'tiny' ({folder}) is in use by PID {os.getpid()}", "--output-dir")


def test_a_sweep_rerun_with_another_config_is_refused_naming_the_keys(tiny_data_dir, tmp_path, monkeypatch):
    monkeypatch.setattr("vse_ray.ray_session.ensure_ray", lambda **options: None)
    monkeypatch.setattr("vse_ray.tune.sweep.fit_trials", _ctrl_c)  # stopped once it has claimed its run
    first = run_cli(sweep_args(tiny_data_dir, tmp_path, "--num-samples", "1", "--epochs", "1"))
    assert first.exit_code == 130, first.output
    client = MlflowClient(f"sqlite:///{tmp_path / 'out' / 'mlflow.db'}")
    (parent,) = client.search_runs([client.get_experiment_by_name(tiny_data_dir.name).experiment_id])
    assert parent.info.status == "KILLED"  # a Ctrl-C before Tune's fit ends the parent run too
    monkeypatch.setattr("vse_ray.tune.sweep.fit_trials", _ray_starts)
    changed = run_cli(sweep_args(tiny_data_dir, tmp_path, "--num-samples", "3", "--epochs", "2"))
    one_error_line(changed, "sweep 'tiny' in ", "num_samples 1 -> 3, train.epochs 1 -> 2", "--name")
    monkeypatch.setattr("vse_ray.tune.sweep.fit_trials", _ctrl_c)
    same = run_cli(
        sweep_args(tiny_data_dir, tmp_path, "--num-samples", "1", "--epochs", "1", "--stop-after-trials", "1")
    )
    assert same.exit_code == 130, same.output  # the same config (stop_after_trials may differ) resumes


def test_a_study_rerun_with_another_config_is_refused_naming_the_keys(tiny_data_dir, tmp_path, monkeypatch):
    monkeypatch.setattr("vse_ray.ray_session.ensure_ray", _ctrl_c)  # stopped once it has claimed its run
    args = ["study", str(study_file(tiny_data_dir, tmp_path)), "--output-dir", str(tmp_path / "out")]
    first = run_cli(args)
    assert first.exit_code == 130, first.output
    study_file(tiny_data_dir, tmp_path, epochs=2, losses=("vsepp", "lseh"))
    one_error_line(
        run_cli(args),
        "study 'tiny' in ",
        "epochs 1 -> 2, losses ['vsepp'] -> ['lseh', 'vsepp']",
        "--output-dir",
    )
    study_file(tiny_data_dir, tmp_path)
    assert run_cli(args).exit_code == 130  # the same config resumes


def test_a_demo_rerun_with_another_config_is_refused_naming_the_keys(tmp_path, monkeypatch):
    monkeypatch.setattr("vse_ray.ray_session.ensure_ray", _ctrl_c)
    args = ["demo", "--seeds", "1", "--output-dir", str(tmp_path / "out")]
    assert run_cli(args).exit_code == 130
    one_error_line(run_cli([*args, "--lr", "0.002", "--seeds", "2"]), "seeds 1 -> 2, train.lr 0.001 -> 0.002")
    assert run_cli(args).exit_code == 130


def test_a_sweep_rerun_that_sets_another_field_is_refused(tiny_data_dir, tmp_path, monkeypatch):
    monkeypatch.setattr("vse_ray.ray_session.ensure_ray", lambda **options: None)
    monkeypatch.setattr("vse_ray.tune.sweep.fit_trials", _ctrl_c)
    assert run_cli(sweep_args(tiny_data_dir, tmp_path, "--num-samples", "1")).exit_code == 130
    changed = run_cli(sweep_args(tiny_data_dir, tmp_path, "--num-samples", "1", "--set", "grad_clip=1.0"))
    one_error_line(
        changed, "sweep 'tiny' in ", "train ['batch_size', 'embed_dim', 'epochs', 'word_dim'] -> ["
    )


def test_first_commands_on_a_new_store_do_not_race(tiny_data_dir, tmp_path):
    """A sweep and a study start at the same moment on one new store: one creates it, the other waits."""
    study = study_file(tiny_data_dir, tmp_path)
    out = str(tmp_path / "out")
    commands = [
        sweep_args(tiny_data_dir, tmp_path, "--num-samples", "1"),
        ["study", str(study), "--output-dir", out],
    ]
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"} | {"PYTHONPATH": str(ROOT)}
    ready = tmp_path / "ready"
    ready.mkdir()
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.support.until_ray", str(ready), str(len(commands)), *args],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for args in commands
    ]
    for run in runs:
        output = run.communicate(timeout=300)[0]
        assert run.returncode == 130, output  # every command got to its Ray work (a Ctrl-C here)
        assert output.splitlines()[-1].startswith("stopped by Ctrl-C"), output


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("command", ["sweep", "train", "study", "demo", "compare", "evaluate"])
def test_an_absent_tracking_server_is_one_line(command, tiny_data_dir, tmp_path, monkeypatch, no_ray):
    uri = f"http://127.0.0.1:{_free_port()}"
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")  # without the check: a traceback, not minutes
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)  # study and demo take it from here only
    study = study_file(tiny_data_dir, tmp_path)
    out = ["--output-dir", str(tmp_path / "out")]
    args = {
        "sweep": sweep_args(tiny_data_dir, tmp_path, "--num-samples", "1", "--tracking-uri", uri),
        "train": ["train", "--data", str(tiny_data_dir), "--epochs", "1", "--tracking-uri", uri, *out],
        "study": ["study", str(study), *out],
        "demo": ["demo", "--seeds", "1", *out],
        "compare": ["compare", "--experiment", "tiny", "--tracking-uri", uri, *out],
        "evaluate": ["evaluate", "--run", "0123abcd", "--tracking-uri", uri, *out],
    }[command]
    start = time.perf_counter()
    result = run_cli(args)
    one_error_line(result, f"tracking server {uri} does not answer", "Connection refused", "--tracking-uri")
    assert time.perf_counter() - start < 30


def test_any_answer_of_a_server_counts():
    from vse_ray.tracking.lifecycle import check_server

    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)  # answers 501
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        check_server(f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
    check_server("sqlite:////nowhere/mlflow.db")  # a local store is not a server


def test_the_store_is_created_on_a_thread_while_ray_starts(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    started = []
    prepare_store_beside(uri, lambda: started.append(threading.current_thread()))
    assert started == [threading.main_thread()] and (tmp_path / "mlflow.db").is_file()
    MlflowClient(uri).search_experiments()  # a store MLflow opens


def test_a_failed_start_is_raised_once_the_store_is_ready(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with pytest.raises(KeyboardInterrupt):
        prepare_store_beside(uri, _ctrl_c)
    assert (tmp_path / "mlflow.db").is_file()  # not left half-created under its lock
    with pytest.raises(ValueError, match="does not answer"):  # the store's own error comes through
        prepare_store_beside(f"http://127.0.0.1:{_free_port()}", lambda: None)
