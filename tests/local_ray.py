"""Ray nodes started by tests with `ray start --block`, each with its own temp dir and ports, stopped by PID.

Never `ray stop`: other Ray instances may run on this machine; only the processes a test started are ended.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

BIN = Path(sys.executable).parent


def free_ports(n: int) -> list[int]:
    """`n` TCP ports free on 127.0.0.1 right now."""
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def ray_env() -> dict[str, str]:
    """This interpreter's environment with token auth on (a fresh token) and usage stats off."""
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
    return env


@dataclass
class LocalNode:
    """One `ray start --block` process group: its temp dir, node-manager port and start log."""

    process: subprocess.Popen
    temp_dir: Path
    node_manager_port: int
    log: Path

    def raylet_pid(self) -> int:
        """PID of this node's raylet (found by its node-manager port)."""
        flag = f"--node_manager_port={self.node_manager_port}"
        pids = [pid for pid, cmd in _cmdlines() if "raylet" in cmd.split("\0")[0] and flag in cmd]
        if len(pids) != 1:
            raise RuntimeError(f"expected one raylet with {flag}, found PIDs {pids}")
        return pids[0]

    def alive(self) -> bool:
        return self.process.poll() is None

    def started(self, timeout_s: float = 180) -> bool:
        """Wait until `ray start` reports the node up (True) or exits (False)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if "Ray runtime started" in self.log.read_text(errors="ignore"):
                return True
            if not self.alive():
                return False
            time.sleep(0.5)
        return False

    def stop(self) -> None:
        """SIGTERM, 3 s later SIGKILL, its process group; kill what is left of its temp dir; delete it."""
        for sig, wait_s in ((signal.SIGTERM, 3), (signal.SIGKILL, 10)):
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.process.wait(timeout=wait_s)
                break
            except subprocess.TimeoutExpired:
                continue
        for pid in pids_using(self.temp_dir):
            with suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.temp_dir, ignore_errors=True)


def start_node(
    env: dict[str, str],
    *,
    head_port: int | None = None,
    gcs_address: str | None = None,
    num_cpus: float = 2,
    resources: dict[str, float] | None = None,
    dashboard_port: int | None = None,
    object_store_bytes: int = 150_000_000,
) -> LocalNode:
    """Start a head (`head_port` given) or a worker node joining `gcs_address`, with ports of its own."""
    temp_dir = Path(tempfile.mkdtemp(prefix="vr_", dir="/tmp"))  # short: socket paths have a length cap
    agent_http, agent_grpc, metrics, runtime_env, node_manager, object_manager, client = free_ports(7)
    command = [
        str(BIN / "ray"), "start", "--block", "--disable-usage-stats", f"--temp-dir={temp_dir}",
        f"--num-cpus={num_cpus}", "--num-gpus=0", f"--object-store-memory={object_store_bytes}",
        f"--resources={json.dumps(resources or {})}",
        f"--dashboard-agent-listen-port={agent_http}", f"--dashboard-agent-grpc-port={agent_grpc}",
        f"--metrics-export-port={metrics}", f"--runtime-env-agent-port={runtime_env}",
        f"--node-manager-port={node_manager}", f"--object-manager-port={object_manager}",
    ]  # fmt: skip
    if head_port is not None:
        command += ["--head", f"--port={head_port}", f"--ray-client-server-port={client}"]
        if dashboard_port is None:
            command += ["--include-dashboard=false"]
        else:
            command += [
                "--include-dashboard=true",
                "--dashboard-host=127.0.0.1",
                f"--dashboard-port={dashboard_port}",
            ]
    else:
        command += [f"--address={gcs_address}"]
    log = temp_dir / "ray_start.log"
    with open(log, "w") as out:
        process = subprocess.Popen(
            command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    return LocalNode(process, temp_dir, node_manager, log)


def ray_cli(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    """`ray <args>` with this environment (its token), output captured."""
    return subprocess.run([str(BIN / "ray"), *args], env=env, capture_output=True, text=True, timeout=timeout)


@dataclass(frozen=True)
class JobRun:
    """A finished `ray job submit`: its logs and the Ray job id its driver ran as (for the state API)."""

    logs: str
    ray_job_id: str


def submit_and_wait(address: str, env: dict[str, str], entrypoint: list[str], timeout_s: float) -> JobRun:
    """`ray job submit` the entrypoint to the dashboard at `address`, wait for it to succeed.

    The job is submitted with the CLI; its status is polled over HTTP with the same token (a CLI call per
    poll would start a Python process every few seconds, CPU the job needs on a small machine).
    """
    from ray.job_submission import JobStatus, JobSubmissionClient

    job_id = f"vse-ray-test-{uuid.uuid4().hex[:8]}"
    deadline = time.monotonic() + timeout_s
    while True:  # the job server can come up a little after the node
        submitted = ray_cli("job", "submit", "--address", address, "--submission-id", job_id, "--no-wait",
                            "--", *entrypoint, env=env)  # fmt: skip
        if submitted.returncode == 0:
            break
        assert time.monotonic() < deadline, submitted.stdout + submitted.stderr
        time.sleep(2)
    client = JobSubmissionClient(address, headers={"Authorization": f"Bearer {env['RAY_AUTH_TOKEN']}"})
    status = client.get_job_status(job_id)
    while not status.is_terminal() and time.monotonic() < deadline:
        time.sleep(0.5)
        status = client.get_job_status(job_id)
    logs = client.get_job_logs(job_id)
    assert status == JobStatus.SUCCEEDED, f"job {job_id} ended {status}:\n{logs[-4000:]}"
    return JobRun(logs, client.get_job_info(job_id).job_id)


def pids_using(temp_dir: Path) -> list[int]:
    """PIDs (other than this one) whose command line names `temp_dir`."""
    return [pid for pid, cmd in _cmdlines() if str(temp_dir) in cmd and pid != os.getpid()]


def _cmdlines() -> list[tuple[int, str]]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with suppress(OSError):
                found.append((int(proc.name), (proc / "cmdline").read_bytes().decode(errors="ignore")))
    return found
