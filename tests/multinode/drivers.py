"""Ray driver programs of the multi-node tests, each run in its own process against the test cluster.

`python -m tests.multinode.drivers <name> '<json kwargs>'` connects to `RAY_ADDRESS`, runs `<name>(**kwargs)`
and prints `RESULT <json>` as its last line.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ray

NODE_NAMES = ("node_a", "node_b")


def node_names(alive_only: bool = True) -> dict[str, str]:
    """Node id -> its custom resource name (`node_a` / `node_b`, else "local"), alive only unless told."""
    return {
        n["NodeID"]: next((r for r in NODE_NAMES if r in n["Resources"]), "local")
        for n in ray.nodes()
        if n["Alive"] or not alive_only
    }


def alive_nodes() -> dict[str, str]:
    return node_names()


def _record_placement(out: str, rank: int) -> None:  # pragma: no cover, runs inside Ray Train workers
    folder = Path(out) / "placement"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"rank{rank}.json").write_text(
        json.dumps(node_names()[ray.get_runtime_context().get_node_id()])
    )


def _ddp_loop(config: dict[str, Any]) -> None:  # pragma: no cover, runs inside Ray Train workers
    """The engine over seeded in-memory shards (`TableBatches`, rank::world_size): known global batches."""
    import ray.train
    import torch

    from vse_ray.data.store.readers import load_captions
    from vse_ray.losses import make_loss
    from vse_ray.train.batches import TableBatches, train_columns
    from vse_ray.train.config import TrainConfig
    from vse_ray.train.epoch_loop import WorkerContext, run_training
    from vse_ray.train.reporter import RayTrainReporter

    cfg = TrainConfig.from_dict(config["cfg"])
    context = ray.train.get_context()
    rank, world = context.get_world_rank(), context.get_world_size()
    _record_placement(config["out"], rank)
    source = make_loss(cfg.loss, **cfg.loss_params).relevance_source
    captions = load_captions(cfg.data_dir, "train", train_columns(source))
    batches = TableBatches(captions, cfg.batch_size, cfg.seed, rank, world)
    run_training(
        cfg.checked(), RayTrainReporter(), None, WorkerContext(batches, torch.device("cpu"), rank, world)
    )


def ddp_fit(cfg: dict[str, Any], out: str) -> dict[str, Any]:
    """A 2-worker TorchTrainer, workers on different nodes (STRICT_SPREAD); its checkpoint and placement."""
    import ray.train
    from ray.train.torch import TorchTrainer

    trainer = TorchTrainer(
        _ddp_loop,
        train_loop_config={"cfg": cfg, "out": out},
        scaling_config=ray.train.ScalingConfig(
            num_workers=2, resources_per_worker={"CPU": 1}, placement_strategy="STRICT_SPREAD"
        ),
        run_config=ray.train.RunConfig(name="ddp", storage_path=str(Path(out) / "ray_results")),
    )
    result = trainer.fit()
    placement = {p.stem: json.loads(p.read_text()) for p in (Path(out) / "placement").glob("rank*.json")}
    return {"checkpoint": result.checkpoint.path, "placement": placement}


def hold_in_epoch(epoch: int, held: str, resumed: str) -> Callable[[], None]:
    """Fault window of the node-loss test, as a worker process setup hook: a worker started before
    `resumed` exists (the first worker group) stops where epoch `epoch` ends, before it reports, and stays
    there until it is killed (`held` tells the test it is there); a worker started after it (the group Ray
    Train starts after the loss) trains and reports as usual."""

    def install() -> None:
        from pathlib import Path

        from vse_ray.train import reporter

        if Path(resumed).exists():
            return
        report = reporter.RayTrainReporter.report

        def hold_or_report(self, metrics, checkpoint_dir):  # type: ignore[no-untyped-def]
            if metrics["epoch"] == epoch:
                Path(held).touch()
                while True:  # pragma: no cover, ends with the worker
                    time.sleep(1)
            report(self, metrics, checkpoint_dir)

        reporter.RayTrainReporter.report = hold_or_report  # type: ignore[method-assign]

    return install


def fit_run(cfg: dict[str, Any], hold: dict[str, Any] | None = None) -> dict[str, Any]:
    """`vse_ray.train.trainer.fit` as the pipelines call it (`hold`: :func:`hold_in_epoch` arguments, applied
    by `main` when it connects); its run id, epochs and the node id of every Ray Train worker it started (a
    dead node has lost its name here: `TwoNodeCluster.node_names` remembers it)."""
    from vse_ray.train.config import TrainConfig
    from vse_ray.train.preflight import check_training
    from vse_ray.train.trainer import fit

    result = fit(check_training(TrainConfig.from_dict(cfg).checked()))
    job_id = ray.get_runtime_context().get_job_id()
    epochs = [m["epoch"] for m in result.history]
    return {"run_id": result.run_id, "epochs": epochs, "workers": train_worker_nodes(job_id)}


def train_worker_nodes(job_id: str) -> list[str]:
    """The node id of every Ray Train worker actor of job `job_id`, alive or dead."""
    from ray.util.state import list_actors

    filters = [("class_name", "=", "RayTrainWorker"), ("job_id", "=", job_id)]
    return [a.node_id for a in list_actors(filters=filters)]


def sweep_run(cfg: dict[str, Any]) -> dict[str, Any]:
    """A checked `SweepConfig(**cfg)` run from this driver; the outcome and the node of every trial actor."""
    from ray.util.state import list_actors

    from vse_ray.tune.sweep import check_sweep, run_sweep
    from vse_ray.tune.sweep_config import SweepConfig

    result = run_sweep(check_sweep(SweepConfig(**cfg)))
    names = node_names(alive_only=False)
    job = [("job_id", "=", ray.get_runtime_context().get_job_id())]
    trials = [
        {"class": a.class_name, "node": names.get(a.node_id, a.node_id)}
        for a in list_actors(filters=job, detail=True, limit=1000)
        if any(name in (a.class_name or "") for name in ("ImplicitFunc", "run_trial"))  # Tune trial actors
    ]
    return {
        "finished": result.finished,
        "num_trials": result.num_trials,
        "num_ended": result.num_ended,
        "num_errors": result.num_errors,
        "parent_run_id": result.parent_run_id,
        "experiment_id": result.experiment_id,
        "path": result.path,
        "trial_nodes": trials,
    }


def precompute_pools(job_id: str) -> dict[str, Any]:
    """The nodes of the model actor pools of precompute job `job_id` (state API), and every node's name."""
    from ray.util.state import list_actors

    names = node_names(alive_only=False)
    actors = list_actors(filters=[("job_id", "=", job_id)], detail=True, limit=1000)
    pools = {}
    for model in ("CNNFeatureExtractor", "CaptionVectorizer"):
        pool = [a for a in actors if model in (a.repr_name or a.class_name)]
        pools[model] = sorted({names.get(a.node_id, "not placed") for a in pool})
    return {"pools": pools, "nodes": names}


def main() -> None:
    name, kwargs = sys.argv[1], json.loads(sys.argv[2])
    hold = kwargs.get("hold")
    runtime_env = {"worker_process_setup_hook": hold_in_epoch(**hold)} if hold else None
    ray.init(
        address=os.environ["RAY_ADDRESS"],
        log_to_driver=False,
        configure_logging=False,
        runtime_env=runtime_env,
    )
    try:
        result = globals()[name](**kwargs)
    finally:
        ray.shutdown()
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
