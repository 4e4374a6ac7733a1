"""A sweep across two nodes: trials placed on both, stopped after two trials, resumed with `Tuner.restore`
from the storage path both nodes share, each trial run once with one MLflow run."""

from __future__ import annotations

import pytest
from mlflow import MlflowClient

from vse_ray.tune.mlflow_trials import PARENT_TAG

pytestmark = [pytest.mark.ray, pytest.mark.multinode]

TINY_TRAINING = {"epochs": 1, "batch_size": 16, "word_dim": 16, "embed_dim": 32, "cs_ks": [5], "ncs_ks": [1]}
SPACE = """
loss: vsepp
params:
  lr: {loguniform: [1.0e-4, 1.0e-2]}
"""


def test_sweep_on_two_nodes_stopped_and_restored(cluster, tiny_dir, tmp_path):
    space = tmp_path / "space.yaml"
    space.write_text(SPACE)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    cfg = {
        "space": str(space),
        "data_dir": str(tiny_dir),
        "train": TINY_TRAINING,
        "num_samples": 3,
        "scheduler": "fifo",
        "cpus_per_trial": 2.0,  # a whole node per trial: two trials at once must use both nodes
        "stop_after_trials": 2,
        "name": "nodes",
        "output_dir": str(tmp_path / "out"),  # the storage path: one folder every node sees
        "tracking_uri": uri,
        "experiment": "sweep-nodes",
    }
    first = cluster.driver("sweep_run", cfg=cfg)
    # the trial whose last epoch reached the limit is still RUNNING in the saved state (restored, it has no
    # epoch left); the other trials that had started, and the pending one, are left for the restore
    assert not first["finished"] and 1 <= first["num_ended"] < 3 and first["num_errors"] == 0
    assert {t["node"] for t in first["trial_nodes"]} == {"node_a", "node_b"}, first["trial_nodes"]

    second = cluster.driver("sweep_run", cfg={**cfg, "stop_after_trials": 0})  # Tuner.restore
    assert second["finished"] and second["num_errors"] == 0
    assert (second["num_trials"], second["num_ended"]) == (3, 3)
    assert (second["path"], second["parent_run_id"]) == (first["path"], first["parent_run_id"])

    client = MlflowClient(uri)
    runs = client.search_runs([second["experiment_id"]], f"tags.`{PARENT_TAG}` = '{second['parent_run_id']}'")
    assert len(runs) == 3 and len({r.data.params["lr"] for r in runs}) == 3  # each trial once
    for run in runs:
        assert [m.step for m in client.get_metric_history(run.info.run_id, "val/rsum")] == [1]
        assert run.info.status == "FINISHED"
