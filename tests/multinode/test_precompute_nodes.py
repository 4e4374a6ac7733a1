"""Precompute across two nodes: pools and image reads on both, output identical to a one-node run."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from tests.multinode.conftest import NODE_CPUS

pytestmark = [pytest.mark.ray, pytest.mark.multinode]

ARGS = "--dataset synthetic --n-train 32 --n-val 8 --n-test 8 --image-size 32 --cnn small --weights none"
ARGS += (
    " --shard-size 8 --svd-dim 16 --vocab-min-count 1 --relevance sbert,svd --cnn-actors 2 --sbert-actors 2"
)


def test_precompute_on_two_nodes_equals_one_node(cluster, tmp_path):
    spread = cluster.driver("precompute_cli", argv=["--out", str(tmp_path / "two"), *ARGS.split()])
    single = cluster.driver(
        "precompute_cli", local_cpus=2 * NODE_CPUS, argv=["--out", str(tmp_path / "one"), *ARGS.split()]
    )
    two, one = spread["manifest"], single["manifest"]
    # each model's actor pool is spread over both nodes (SPREAD); which actor gets which block is Ray Data's
    # choice, so the manifest's record of the nodes that did the work is checked to name cluster nodes only
    assert spread["pools"] == {
        "CNNFeatureExtractor": ["node_a", "node_b"],
        "CaptionVectorizer": ["node_a", "node_b"],
    }
    recorded = {n for stages in two["nodes"].values() for ns in stages.values() for n in ns}
    assert recorded and {spread["nodes"][n] for n in recorded} <= {"node_a", "node_b"}
    assert set(two["nodes"]["features"]) == {"read", "model", "write"}
    assert {single["nodes"][n] for stages in one["nodes"].values() for ns in stages.values() for n in ns} == {
        "local"
    }
    assert two["shards"] == one["shards"]  # every Parquet file: same name, rows and sha256
    assert two["relevance"] == one["relevance"]
    for file in two["shards"]:
        assert pq.read_table(tmp_path / "two" / file).equals(pq.read_table(tmp_path / "one" / file))
