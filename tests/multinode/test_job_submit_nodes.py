"""`ray job submit` with token auth to the two-node cluster: precompute, then DDP training on both nodes."""

from __future__ import annotations

import json
import sys

import pytest
from mlflow import MlflowClient

from tests.local_ray import ray_cli, submit_and_wait
from tests.multinode.conftest import REPO

pytestmark = [pytest.mark.ray, pytest.mark.multinode]


def test_precompute_and_train_jobs_on_two_nodes(cluster, tmp_path):
    data, out, uri = tmp_path / "data", tmp_path / "out", f"sqlite:///{tmp_path / 'mlflow.db'}"
    anonymous = {**cluster.env, "RAY_AUTH_TOKEN": "not-the-token"}
    assert ray_cli("job", "list", "--address", cluster.dashboard_address, env=anonymous).returncode != 0

    precompute = [sys.executable, str(REPO / "pipelines" / "precompute.py"), "--out", str(data)]
    precompute += "--dataset synthetic --n-train 24 --n-val 10 --n-test 10 --image-size 32".split()
    precompute += "--cnn small".split()
    precompute += (
        "--weights none --shard-size 8 --svd-dim 8 --vocab-min-count 1 --relevance sbert,svd".split()
    )
    precompute += "--cnn-actors 2 --sbert-actors 2".split()
    submit_and_wait(cluster.dashboard_address, cluster.env, precompute, timeout_s=400)
    nodes = json.loads((data / "manifest.json").read_text())["nodes"]
    assert (
        nodes["features"]["model"] and nodes["captions"]["model"]
    )  # the manifest names the nodes that worked

    train = [
        sys.executable,
        str(REPO / "pipelines" / "train.py"),
        *f"--data {data} --output-dir {out}".split(),
    ]
    train += "--loss ladder --epochs 1 --batch-size 8 --word-dim 16 --embed-dim 32".split()
    train += "--num-workers 2 --cpus-per-worker 1.5".split()  # 1.5 of each node's 2 CPUs: one worker per node
    train += ["--tracking-uri", uri, "--experiment", "two-nodes"]
    logs = submit_and_wait(cluster.dashboard_address, cluster.env, train, timeout_s=400)
    assert "#/experiments/" in logs

    client = MlflowClient(uri)
    (run,) = client.search_runs([client.get_experiment_by_name("two-nodes").experiment_id])
    assert run.info.status == "FINISHED" and run.data.params["num_workers"] == "2"
    assert [m.step for m in client.get_metric_history(run.info.run_id, "rsum")] == [1]
