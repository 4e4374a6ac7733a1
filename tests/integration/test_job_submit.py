"""`ray job submit` against a real local head started by this test: demo precompute + train, then MLflow."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from mlflow import MlflowClient

from tests.local_ray import LocalNode, free_ports, ray_cli, ray_env, start_node, submit_and_wait

REPO = Path(__file__).resolve().parents[2]


@dataclass
class LocalHead:
    """A `ray start --head --block` node and the environment (with its token) that reaches it."""

    address: str
    env: dict[str, str]
    node: LocalNode


@pytest.fixture()
def local_head() -> Iterator[LocalHead]:
    """A Ray head with its own temp dir, ports and auth token; only its own processes are stopped."""
    gcs, dashboard = free_ports(2)
    env = ray_env()
    node = start_node(
        env, head_port=gcs, num_cpus=2, dashboard_port=dashboard, object_store_bytes=200_000_000
    )
    try:
        if not node.started():
            pytest.fail(f"ray head did not come up:\n{node.log.read_text()[-3000:]}")
        yield LocalHead(f"http://127.0.0.1:{dashboard}", env, node)
    finally:
        node.stop()


@pytest.mark.ray
@pytest.mark.servers
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
    denied = ray_cli("job", "list", "--address", local_head.address, env=anonymous)
    assert denied.returncode != 0  # token authentication is on
    submit_and_wait(local_head.address, local_head.env, precompute, timeout_s=300)
    assert (data / "manifest.json").is_file()
    logs = submit_and_wait(local_head.address, local_head.env, train, timeout_s=300).logs
    assert "#/experiments/" in logs

    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("job-submit")
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FINISHED" and run.data.params["loss"] == "vsepp"
    assert [m.step for m in client.get_metric_history(run.info.run_id, "val/rsum")] == [1]
