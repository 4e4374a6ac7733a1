"""`ray job submit` with token auth to the two-node cluster: a precompute spread over both nodes whose output
equals a one-node run's, then DDP training on both nodes from it."""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request

import numpy as np
import pytest
from mlflow import MlflowClient
from typer.testing import CliRunner

from tests.local_ray import submit_and_wait
from tests.multinode.conftest import REPO
from vse_ray.cli.main import app
from vse_ray.data.store.readers import load_captions, load_features, load_relevance

pytestmark = [pytest.mark.ray, pytest.mark.multinode]

PRECOMPUTE = "--dataset synthetic --n-train 32 --n-val 10 --n-test 10 --image-size 32 --cnn small"
PRECOMPUTE += " --weights none --shard-size 8 --svd-dim 16 --vocab-min-count 1 --relevance sbert,svd"
TWO_NODE_POOLS = "--cnn-actors 2 --sbert-actors 2"  # one actor per node on the cluster
ONE_NODE_POOLS = "--cnn-actors 1 --sbert-actors 1"  # the output does not depend on the pools


def test_precompute_and_train_jobs_on_two_nodes(cluster, ray_session, tmp_path):
    two, uri = tmp_path / "two", f"sqlite:///{tmp_path / 'mlflow.db'}"
    # the job API refuses a wrong token (the CLI's refusal is checked in tests/integration/test_job_submit.py)
    wrong_token = {"Authorization": "Bearer not-the-token"}
    with pytest.raises(urllib.error.HTTPError, match="401|403"):
        urllib.request.urlopen(
            urllib.request.Request(f"{cluster.dashboard_address}/api/jobs/", headers=wrong_token)
        )

    precompute = [sys.executable, str(REPO / "pipelines" / "precompute.py"), "--out", str(two)]
    precompute += [*PRECOMPUTE.split(), *TWO_NODE_POOLS.split()]
    job = submit_and_wait(cluster.dashboard_address, cluster.env, precompute, 400)
    spread = cluster.driver("precompute_pools", job_id=job.ray_job_id)
    # each model's actor pool is spread over both nodes (one actor per node); which actor gets which block is
    # Ray Data's choice, so the manifest's record of the nodes that did the work is checked to name cluster
    # nodes only
    assert spread["pools"] == {
        "CNNFeatureExtractor": ["node_a", "node_b"],
        "CaptionVectorizer": ["node_a", "node_b"],
    }
    # the one-node reference: the same command here, on the session's one-node local Ray (tests/conftest.py)
    reference = ["precompute", "--out", str(tmp_path / "one"), *PRECOMPUTE.split(), *ONE_NODE_POOLS.split()]
    single = CliRunner().invoke(app, reference)
    assert single.exit_code == 0, single.output
    manifest = json.loads((two / "manifest.json").read_text())
    one = json.loads((tmp_path / "one" / "manifest.json").read_text())
    recorded = {n for stages in manifest["nodes"].values() for ns in stages.values() for n in ns}
    assert recorded and {spread["nodes"][n] for n in recorded} <= {"node_a", "node_b"}
    assert set(manifest["nodes"]["features"]) == {"read", "model", "write"}
    local_node = ray_session.get_runtime_context().get_node_id()
    assert {n for stages in one["nodes"].values() for ns in stages.values() for n in ns} == {local_node}
    assert manifest["shards"] == one["shards"]  # every shard file: same name, rows and sha256
    assert manifest["relevance"] == one["relevance"]
    stores = (str(two), str(tmp_path / "one"))
    for split in ("train", "val", "test"):  # what the store's readers give training, in whatever format
        captions = [load_captions(store, split) for store in stores]
        assert captions[0].equals(captions[1])
        for got, want in zip(*(load_features(store, split) for store in stores), strict=True):
            np.testing.assert_array_equal(got, want)
    for matrix in manifest["relevance"]:  # "val/sbert", ...: a training computes its batches' from captions
        split, source = matrix.split("/")
        np.testing.assert_array_equal(*(load_relevance(store, split, source) for store in stores))

    train = [sys.executable, str(REPO / "pipelines" / "train.py"), "--data", str(two)]
    train += ["--output-dir", str(tmp_path / "out")]
    train += "--loss ladder --epochs 1 --batch-size 8 --word-dim 16 --embed-dim 32".split()
    train += "--num-workers 2 --cpus-per-worker 1.5".split()  # 1.5 of each node's 2 CPUs: one worker per node
    train += ["--tracking-uri", uri, "--experiment", "two-nodes"]
    assert "#/experiments/" in submit_and_wait(cluster.dashboard_address, cluster.env, train, 400).logs

    client = MlflowClient(uri)
    (run,) = client.search_runs([client.get_experiment_by_name("two-nodes").experiment_id])
    assert run.info.status == "FINISHED" and run.data.params["num_workers"] == "2"
    assert [m.step for m in client.get_metric_history(run.info.run_id, "val/rsum")] == [1]
