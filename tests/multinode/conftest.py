"""A two-node Ray cluster on this machine for the whole session: head `node_a` (+ dashboard), worker `node_b`.

Both nodes are separate `ray start --block` process groups with their own temp dirs, ports and custom resource
(`{"node_a": 1}` / `{"node_b": 1}`), so placement can be forced and checked. Token auth is on, as on a real
cluster. The test process never joins it (the session-wide one-node local Ray of `tests/conftest.py` may live
in it, and serves as the one-node reference): every Ray program on the cluster runs as a driver subprocess
(`tests/multinode/drivers.py`) or a `ray job submit`. Storage "shared by every node" is a local folder here:
both nodes run on one filesystem.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.local_ray import LocalNode, free_ports, ray_env, start_node
from tests.support.tiny_store import write_tiny_store

REPO = Path(__file__).resolve().parents[2]
NODE_CPUS = 2
# The head's GCS declares a node dead after 3 failed health checks 1 s apart (~3 s for a killed raylet, which
# refuses the check at once); Ray's defaults, 5 checks 3 s apart, suit real networks. (Ray Train's poll
# interval reaches the nodes from tests/conftest.py through the environment `ray_env` copies.)
HEALTH_CHECKS = {"RAY_health_check_period_ms": "1000", "RAY_health_check_failure_threshold": "3"}
NODE_NAMES = ("node_a", "node_b")


@dataclass
class TwoNodeCluster:
    """The running cluster: its addresses, the token environment, and the node processes by name."""

    gcs_address: str
    dashboard_address: str
    env: dict[str, str]
    nodes: dict[str, LocalNode] = field(default_factory=dict)
    node_names: dict[str, str] = field(default_factory=dict)  # node id -> name of every node seen alive

    def driver(self, name: str, timeout_s: float = 300, **kwargs: Any) -> dict[str, Any]:
        """Run `drivers.<name>(**kwargs)` in a subprocess connected to this cluster; its JSON result."""
        return self.wait_driver(self.start_driver(name, **kwargs), timeout_s)

    def start_driver(self, name: str, **kwargs: Any) -> subprocess.Popen:
        """`drivers.<name>(**kwargs)` in a subprocess connected to this cluster."""
        command = [sys.executable, "-m", "tests.multinode.drivers", name, json.dumps(kwargs)]
        return subprocess.Popen(
            command,
            cwd=REPO,
            env={**self.env, "RAY_ADDRESS": self.gcs_address},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    @staticmethod
    def wait_driver(process: subprocess.Popen, timeout_s: float) -> dict[str, Any]:
        try:
            out, _ = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            out, _ = process.communicate()
            pytest.fail(f"driver timed out after {timeout_s} s:\n{out[-4000:]}")
        lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
        assert process.returncode == 0 and lines, f"driver failed ({process.returncode}):\n{out[-4000:]}"
        return json.loads(lines[-1][len("RESULT ") :])

    def start_worker_node(self, attempts: int = 3) -> None:
        """Start `node_b` (retried: a loaded machine can time out a node's start-up)."""
        for _ in range(attempts):
            node = start_node(
                self.env, gcs_address=self.gcs_address, num_cpus=NODE_CPUS, resources={"node_b": 1}
            )
            self.nodes["node_b"] = node
            if node.started():
                return
            log = node.log.read_text()[-3000:]
            node.stop()
        pytest.fail(f"node_b did not start:\n{log}")

    def wait_for_nodes(self, timeout_s: float = 120) -> dict[str, str]:
        """Block until both nodes are alive; return node id -> node name."""
        deadline = time.monotonic() + timeout_s
        while True:
            alive = self.driver("alive_nodes", timeout_s=timeout_s)
            self.node_names.update(alive)
            if sorted(alive.values()) == list(NODE_NAMES):
                return alive
            if time.monotonic() > deadline:
                logs = {n: node.log.read_text(errors="ignore")[-1500:] for n, node in self.nodes.items()}
                pytest.fail(f"cluster has nodes {alive}, expected {NODE_NAMES}:\n{logs}")
            time.sleep(1)

    def ensure_two_nodes(self) -> dict[str, str]:
        """Restart the worker node if a test killed it; return node id -> node name."""
        if not self.nodes["node_b"].alive():
            self.nodes["node_b"].stop()
            self.start_worker_node()
        return self.wait_for_nodes()


@pytest.fixture(scope="session")
def two_nodes() -> Iterator[TwoNodeCluster]:
    gcs_port, dashboard_port = free_ports(2)
    env = {**ray_env(), **HEALTH_CHECKS}
    cluster = TwoNodeCluster(f"127.0.0.1:{gcs_port}", f"http://127.0.0.1:{dashboard_port}", env)
    try:
        cluster.nodes["node_a"] = start_node(
            env,
            head_port=gcs_port,
            num_cpus=NODE_CPUS,
            resources={"node_a": 1},
            dashboard_port=dashboard_port,
        )
        if not cluster.nodes["node_a"].started():
            pytest.fail(f"head did not start:\n{cluster.nodes['node_a'].log.read_text()[-3000:]}")
        cluster.start_worker_node()
        cluster.wait_for_nodes()
        yield cluster
    finally:
        for name in reversed(list(cluster.nodes)):
            cluster.nodes[name].stop()


@pytest.fixture()
def cluster(two_nodes) -> TwoNodeCluster:
    """The session cluster with both nodes up (restarted if an earlier test killed one)."""
    two_nodes.ensure_two_nodes()
    return two_nodes


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory) -> Path:
    return write_tiny_store(tmp_path_factory.mktemp("multinode") / "tiny")
