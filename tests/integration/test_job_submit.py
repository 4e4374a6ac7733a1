"""`ray job submit` against a real local head started by this test: demo precompute + train, then MLflow."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import pytest
from mlflow import MlflowClient

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
TERMINAL_WORDS = {"succeeded": "SUCCEEDED", "failed": "FAILED", "was stopped": "STOPPED"}


@dataclass
class LocalHead:
    """A `ray start --head --block` process group and the environment that reaches it."""

    address: str
    env: dict[str, str]
    temp_dir: Path
    process: subprocess.Popen


def _free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _ray(head: LocalHead, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / "ray"), *args], env=head.env, capture_output=True, text=True, timeout=timeout, check=False
    )


def _stop(process: subprocess.Popen, temp_dir: Path) -> None:
    """Stop the process group this test launched (`ray start --block` cleans up its children on SIGTERM)."""
    for sig, wait_s in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=wait_s)
            break
        except subprocess.TimeoutExpired:
            continue
    for pid in _pids_using(temp_dir):  # Ray processes of this head that left the group (by PID)
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _pids_using(temp_dir: Path) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if str(temp_dir) in (proc / "cmdline").read_bytes().decode(errors="ignore"):
                    pids.append(int(proc.name))
            except OSError:
                continue
    return [p for p in pids if p != os.getpid()]


@pytest.fixture()
def local_head() -> Iterator[LocalHead]:
    """A Ray head with its own temp dir, ports and auth token; only its own processes are stopped."""
    temp_dir = Path(tempfile.mkdtemp(prefix="vr_", dir="/tmp"))  # short: Ray's socket paths have a length cap
    gcs, dashboard, client, agent_http, agent_grpc, metrics, runtime_env, node_manager, object_manager = (
        _free_ports(9)
    )
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": uuid.uuid4().hex,
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0",
        "HF_HUB_OFFLINE": "1",
    }
    env.pop("RAY_ADDRESS", None)
    command = [
        str(BIN / "ray"), "start", "--head", "--block", "--disable-usage-stats",
        f"--temp-dir={temp_dir}", f"--port={gcs}", "--num-cpus=2", "--num-gpus=0",
        "--object-store-memory=200000000", "--include-dashboard=true", "--dashboard-host=127.0.0.1",
        f"--dashboard-port={dashboard}", f"--ray-client-server-port={client}",
        f"--dashboard-agent-listen-port={agent_http}", f"--dashboard-agent-grpc-port={agent_grpc}",
        f"--metrics-export-port={metrics}", f"--runtime-env-agent-port={runtime_env}",
        f"--node-manager-port={node_manager}", f"--object-manager-port={object_manager}",
    ]  # fmt: skip
    log = open(temp_dir / "ray_start.log", "w")  # noqa: SIM115 - closed in the finalizer
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    head = LocalHead(f"http://127.0.0.1:{dashboard}", env, temp_dir, process)
    try:
        deadline = time.monotonic() + 120
        while _ray(head, "job", "list", "--address", head.address, timeout=60).returncode != 0:
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"ray head did not come up:\n{(temp_dir / 'ray_start.log').read_text()[-3000:]}")
            time.sleep(2)
        yield head
    finally:
        _stop(process, temp_dir)
        log.close()
        shutil.rmtree(temp_dir, ignore_errors=True)


def _submit_and_wait(head: LocalHead, entrypoint: list[str], timeout_s: float) -> str:
    job_id = f"vse-ray-test-{uuid.uuid4().hex[:8]}"
    submitted = _ray(head, "job", "submit", "--address", head.address, "--submission-id", job_id, "--no-wait",
                     "--", *entrypoint)  # fmt: skip
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    deadline, status = time.monotonic() + timeout_s, ""
    while time.monotonic() < deadline:
        out = _ray(head, "job", "status", "--address", head.address, job_id)
        text = re.sub(r"\x1b\[[0-9;]*m", "", out.stdout + out.stderr)  # drop colour codes
        found = re.search(r"Job '[^']+' (succeeded|failed|was stopped)", text)  # terminal-state lines
        status = TERMINAL_WORDS[found.group(1)] if found else ""
        if status:
            break
        time.sleep(3)
    logs = _ray(head, "job", "logs", "--address", head.address, job_id).stdout
    assert status == "SUCCEEDED", f"job {job_id} ended {status or 'by timeout'}:\n{logs[-4000:]}"
    return logs


@pytest.mark.ray
def test_precompute_and_train_jobs_reach_mlflow(local_head, tmp_path):
    data, out = tmp_path / "data", tmp_path / "out"
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    precompute = [sys.executable, str(REPO / "pipelines" / "precompute.py"), "--out", str(data)]
    precompute += (
        "--dataset synthetic --n-train 40 --n-val 10 --n-test 10 --image-size 32 --cnn small".split()
    )
    precompute += "--weights none --shard-size 16 --svd-dim 16 --vocab-min-count 1".split()
    train = [
        sys.executable,
        str(REPO / "pipelines" / "train.py"),
        "--data",
        str(data),
        "--output-dir",
        str(out),
    ]
    train += (
        "--loss vsepp --epochs 1 --batch-size 16 --word-dim 16 --embed-dim 32 --cpus-per-worker 0.5".split()
    )
    train += ["--tracking-uri", uri, "--experiment", "job-submit"]
    anonymous = {**local_head.env, "RAY_AUTH_TOKEN": "not-the-token"}
    denied = subprocess.run([str(BIN / "ray"), "job", "list", "--address", local_head.address], env=anonymous,
                            capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert denied.returncode != 0  # token authentication is on
    _submit_and_wait(local_head, precompute, timeout_s=300)
    assert (data / "manifest.json").is_file()
    logs = _submit_and_wait(local_head, train, timeout_s=300)
    assert "#/experiments/" in logs

    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("job-submit")
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FINISHED" and run.data.params["loss"] == "vsepp"
    assert [m.step for m in client.get_metric_history(run.info.run_id, "rsum")] == [1]
