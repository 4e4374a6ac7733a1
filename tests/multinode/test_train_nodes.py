"""DDP training across two nodes: equal to one worker over the same global batches; a lost node mid-epoch."""

from __future__ import annotations

import dataclasses
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from mlflow import MlflowClient

from tests.support.local_reporter import LocalReporter
from tests.support.tiny_store import tiny_config
from vse_ray.checkpoint_files import load_checkpoint
from vse_ray.data.store.readers import load_captions
from vse_ray.losses import make_loss
from vse_ray.train.batches import TableBatches, train_columns
from vse_ray.train.epoch_loop import WorkerContext, run_training

pytestmark = [pytest.mark.ray, pytest.mark.multinode]


class _GlobalBatches:
    """Batch k of every rank's shard, concatenated in rank order: the global batches of a DDP run."""

    def __init__(self, shards: list[TableBatches]):
        self.shards = shards

    def epoch_batches(self, epoch: int):
        for parts in zip(*(s.epoch_batches(epoch) for s in self.shards), strict=True):
            yield {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def test_ddp_on_two_nodes_equals_one_worker_over_the_global_batches(cluster, tiny_dir, tmp_path):
    cfg = tiny_config(tiny_dir, tmp_path / "out", loss="ladder", epochs=1, batch_size=8)
    result = cluster.driver("ddp_fit", cfg=cfg.to_dict(), out=str(tmp_path))
    assert sorted(result["placement"].values()) == ["node_a", "node_b"]  # one worker per node
    distributed = load_checkpoint(result["checkpoint"])

    source = make_loss(cfg.loss).relevance_source
    captions = load_captions(cfg.data_dir, "train", train_columns(source))
    shards = [TableBatches(captions, cfg.batch_size, cfg.seed, rank, 2) for rank in range(2)]
    one = dataclasses.replace(cfg, batch_size=2 * cfg.batch_size)
    reporter = LocalReporter(tmp_path / "one")
    run_training(one.checked(), reporter, None, WorkerContext(_GlobalBatches(shards), torch.device("cpu")))
    reference = load_checkpoint(reporter.checkpoints[-1])

    assert distributed["history"][0]["train_loss"] == pytest.approx(
        reference["history"][0]["train_loss"], rel=1e-5
    )
    for name, want in reference["model"].items():
        torch.testing.assert_close(distributed["model"][name], want, rtol=1e-4, atol=1e-5, msg=name)


def _epochs_in_mlflow(uri: str, run_id: str) -> list[int]:
    return sorted(m.step for m in MlflowClient(uri).get_metric_history(run_id, "val/rsum"))


def test_worker_node_lost_mid_epoch_resumes_from_checkpoint(cluster, tiny_dir, tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    cfg = tiny_config(
        tiny_dir, tmp_path / "out", num_workers=2, placement_strategy="SPREAD", epochs=3, batch_size=16,
        max_failures=2, tracking_uri=uri, run_name="node-loss",
    ).resolved()  # fmt: skip
    # SPREAD: one worker per node while both nodes are up; 1 CPU each, so both fit on node_a after the loss.
    held, resumed = tmp_path / "held", tmp_path / "resumed"
    hold = {"epoch": 2, "held": str(held), "resumed": str(resumed)}  # both workers stop at the end of epoch 2
    driver = cluster.start_driver("fit_run", cfg=cfg.to_dict(), hold=hold)
    run_dir = Path(cfg.storage_path) / cfg.run_name
    deadline = time.monotonic() + 300
    while not held.exists():
        assert driver.poll() is None and time.monotonic() < deadline, "epoch 2 was not reached"
        time.sleep(0.2)
    resumed.touch()  # the worker group Ray Train starts next trains through
    worker_node = cluster.nodes["node_b"]
    os.kill(worker_node.raylet_pid(), signal.SIGKILL)  # node_b is gone in the middle of epoch 2
    (checkpoint,) = [p for p in run_dir.glob("checkpoint_*") if p.is_dir()]  # not the manager's snapshot
    assert load_checkpoint(checkpoint)["epoch"] == 1  # epoch 2 had not reported: the loss fell inside it
    worker_node.process.wait(timeout=60)
    worker_node.stop()  # not restarted: the run goes on on the node that remains (the next test restarts it)

    result = cluster.wait_driver(driver, timeout_s=400)
    assert result["epochs"] == [1, 2, 3]
    assert _epochs_in_mlflow(uri, result["run_id"]) == [1, 2, 3]  # none duplicated, none missing
    # the first worker group (one worker per node) and the one that resumed, both its workers on node_a
    nodes = sorted(cluster.node_names[node_id] for node_id in result["workers"])
    assert nodes == ["node_a", "node_a", "node_a", "node_b"]
