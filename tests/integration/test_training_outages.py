"""A training cut off from outside, in its own process: SIGTERM, and its tracking server killed mid-run (a
real ``mlflow server`` on 127.0.0.1, sqlite behind it). Each ends in one line, keeps its checkpoints, and
the same command run again completes the run's record, every epoch once."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from mlflow import MlflowClient

from tests.support.cli import run_cli
from tests.support.driver_process import Driver
from vse_ray.tracking.lifecycle import HTTP_RETRIES
from vse_ray.train.in_process import kept_checkpoints

EPOCHS = 4
BOUND_S = 60  # a dead server costs the command one call's bounded retries (about 10 s), then quick checks


def _train(data: Path, out: Path, *args: str) -> list[str]:
    tiny = ("--batch-size", "16", "--word-dim", "16", "--embed-dim", "32", "--loss", "vsepp")
    return ["train", "--data", str(data), "--output-dir", str(out), "--num-workers", "0", *tiny, *args,
            "--epochs", str(EPOCHS)]  # fmt: skip


class MlflowServer:
    """``mlflow server`` on a free port of 127.0.0.1, its runs in ``folder``; killed and started again."""

    def __init__(self, folder: Path):
        self.folder = folder
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.uri = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None

    def start(self, timeout_s: float = 180) -> None:
        store = f"sqlite:///{self.folder / 'server.db'}"
        args = ["server", "--backend-store-uri", store, "--artifacts-destination", str(self.folder / "art")]
        args += ["--host", "127.0.0.1", "--port", str(self.port), "--workers", "1"]
        log = (self.folder / "server.log").open("a")
        env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}  # no job runner: a quicker start
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mlflow", *args], stdout=log, stderr=log, env=env, start_new_session=True
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                urllib.request.urlopen(f"{self.uri}/health", timeout=2).close()
                return
            except OSError:
                time.sleep(0.5)
        self.kill()
        raise AssertionError(f"mlflow server did not start:\n{(self.folder / 'server.log').read_text()}")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)  # the server and its uvicorn worker
            self.process.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    started = MlflowServer(tmp_path_factory.mktemp("mlflow_server"))
    started.start()
    yield started
    started.kill()


def _the_run(uri: str, experiment: str):
    client = MlflowClient(uri)
    (run,) = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    return client, run


def _every_epoch_once(client: MlflowClient, run) -> None:
    steps = sorted(m.step for m in client.get_metric_history(run.info.run_id, "val/rsum"))
    assert steps == list(range(1, EPOCHS + 1))
    assert "val/best_rsum" in run.data.metrics


@pytest.mark.servers
def test_a_tracking_server_killed_mid_run_is_one_line_then_the_rerun_completes_it(
    server, tiny_data_dir, tmp_path, monkeypatch
):
    for name, value in HTTP_RETRIES.items():  # as the command sets them (check_server), for this process
        monkeypatch.setenv(name, value)
    out = tmp_path / "out"
    args = _train(tiny_data_dir, out, "--tracking-uri", server.uri)
    driver = Driver(args, tmp_path, joins_ray=False)
    driver.wait_for("epoch 1/")
    server.kill()
    killed = time.monotonic()
    code = driver.process.wait(timeout=300)
    seconds = time.monotonic() - killed
    driver._reader.join(timeout=10)
    console = driver.console()
    assert code == 1 and seconds < BOUND_S, (code, seconds, console)
    lines = console.splitlines()
    assert f"epoch {EPOCHS}/{EPOCHS}: val rsum" in console  # the training went on
    assert "Traceback" not in console
    warned = [line for line in lines if line.startswith("warning: epoch ") and "tracking server" in line]
    assert len(warned) == 1 and f"tracking server {server.uri} does not answer" in warned[0], console
    assert warned[0].endswith("training goes on, its epochs are logged when the server answers again")
    folder = out / "ray_results" / f"{tiny_data_dir.name}-vsepp-s0"
    assert lines[-1].startswith(f"error: tracking server {server.uri} does not answer"), console
    assert lines[-1].endswith("run the same command again when the server answers: it resumes and completes "
                              "the run's record") and str(folder) in lines[-1]  # fmt: skip
    assert EPOCHS in kept_checkpoints(folder)

    server.start()
    rerun = run_cli(args)
    assert rerun.exit_code == 0, rerun.output
    client, run = _the_run(server.uri, tiny_data_dir.name)
    assert run.info.status == "FINISHED"
    _every_epoch_once(client, run)


@pytest.mark.faults
def test_sigterm_stops_a_train_as_ctrl_c_does(tiny_data_dir, tmp_path):
    out = tmp_path / "out"
    driver = Driver(_train(tiny_data_dir, out), tmp_path, joins_ray=False)
    driver.wait_for("epoch 1/")
    code, console = driver.stop(signal.SIGTERM)
    assert code == 128 + signal.SIGTERM, console
    assert console.splitlines()[-1] == (
        "stopped by SIGTERM: run the same command again to resume from the last checkpoint (the MLflow run "
        "is KILLED)"
    )
    assert "Traceback" not in console
    uri = f"sqlite:///{out / 'mlflow.db'}"
    _, run = _the_run(uri, tiny_data_dir.name)
    assert run.info.status == "KILLED"
    assert kept_checkpoints(out / "ray_results" / f"{tiny_data_dir.name}-vsepp-s0")  # epoch 1 at least

    rerun = run_cli(_train(tiny_data_dir, out))
    assert rerun.exit_code == 0, rerun.output
    client, resumed = _the_run(uri, tiny_data_dir.name)
    assert resumed.info.run_id == run.info.run_id and resumed.info.status == "FINISHED"
    _every_epoch_once(client, resumed)
