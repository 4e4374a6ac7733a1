"""The two Ray Data steps every precompute table shares: a model in an actor pool, and the shard writer."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import pyarrow as pa
import ray
from ray.util.placement_group import placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from vse_ray.data.precompute.resources import TASK_CPUS, StageResources
from vse_ray.data.store.shards import (
    NODE_PREFIX,
    Shard,
    ShardLedger,
    current_node,
    record_pieces,
    write_pieces,
)

POOL_START_TIMEOUT_S = 1800  # an autoscaled GPU node may take minutes to join before its actor starts
STRICT_SPREAD_WAIT_S = 60  # how long a pool waits for one actor slot per node before settling for less


def _tag_node(batch: dict[str, np.ndarray], stage: str) -> dict[str, np.ndarray]:
    """Add a column naming the Ray node this batch was processed on (recorded in the shard markers)."""
    rows = len(next(iter(batch.values())))
    batch[NODE_PREFIX + stage] = np.full(rows, current_node())
    return batch


def on_node(batch: dict[str, np.ndarray], *, fn: Callable, stage: str, **kwargs) -> dict[str, np.ndarray]:
    """``map_batches`` function: ``fn(batch, **kwargs)`` with the node that ran it tagged as ``stage``."""
    return _tag_node(fn(batch, **kwargs), stage)


def _node_tagged(model: type, stage: str) -> type:
    """``model`` whose batches also name the node of the actor that computed them."""

    class NodeTagged(model):
        def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            return _tag_node(super().__call__(batch), stage)

    NodeTagged.__name__ = model.__name__
    return NodeTagged


def dataset_of_shards(blocks: list[pa.Table]) -> ray.data.Dataset:
    """A dataset of one block per shard, whose operators share the CPUs by our resource plan alone.

    Ray Data reserves a share of the cluster for each operator, which on a small node can throttle the
    tasks beside a pool that holds most CPUs.
    :func:`~vse_ray.data.precompute.resources.plan_resources` already leaves room for the decode and write
    tasks, so this dataset (its own copy of the context) runs without operator reservations. Its actor pools
    start every actor before the first block: otherwise the first model copy up takes every block of a small
    stage while the copies on the other nodes still load, and the pool is not spread over the nodes.
    """
    ds = ray.data.from_arrow(blocks)
    ds.context.op_resource_reservation_enabled = False
    ds.context.wait_for_min_actors_s = POOL_START_TIMEOUT_S
    return ds


@contextmanager
def pool_placement(res: StageResources) -> Iterator[PlacementGroupSchedulingStrategy]:
    """Where the actors of a pool planned as ``res`` run, for as long as the stage runs: one actor per node.

    A placement group holds one bundle (an actor's CPUs and GPUs) per actor. When at least as many nodes can
    hold a bundle as there are actors, the bundles are STRICT_SPREAD, each on its own node; the group waits
    up to :data:`STRICT_SPREAD_WAIT_S` for that (a node still releasing the previous stage's actors) and
    otherwise settles for SPREAD, as it does when there are more actors than nodes. Plain ``SPREAD``
    scheduling of the actors is not enough: each actor is placed on its owner's view of the nodes, and a node
    whose previous pool has just ended can look full, so both actors of a two-node pool landed on the head.
    """
    bundle = {"CPU": res.actor_cpus, **({"GPU": res.actor_gpus} if res.actor_gpus else {})}
    nodes = [n["Resources"] for n in ray.nodes() if n["Alive"]]
    strict = res.actors <= sum(all(node.get(k, 0) >= v for k, v in bundle.items()) for node in nodes)
    group = placement_group([bundle] * res.actors, strategy="STRICT_SPREAD" if strict else "SPREAD")
    if strict and not group.wait(timeout_seconds=STRICT_SPREAD_WAIT_S):
        remove_placement_group(group)
        group = placement_group([bundle] * res.actors, strategy="SPREAD")
    try:
        yield PlacementGroupSchedulingStrategy(group)
    finally:
        remove_placement_group(group)


def map_in_actor_pool(
    ds: ray.data.Dataset,
    model: type,
    kwargs: dict,
    res: StageResources,
    placement: PlacementGroupSchedulingStrategy,
) -> ray.data.Dataset:
    """``map_batches`` of a callable model class, one block (= one shard) per call, on ``res.actors`` actors.

    The class receives ``kwargs`` plus ``device`` and ``num_threads`` from the resource plan; the node of the
    actor that computed each batch is recorded as stage "model". The actors run in the bundles of
    ``placement`` (:func:`pool_placement`: one per node first), so a multi-node cluster shares the model work.
    """
    with warnings.catch_warnings():
        # Ray 2.60 has no named parameter for an actor pool's scheduling strategy yet; the keyword form
        # warns that `ray_remote_args` will change in 2.64 (pinned: ray==2.60.0).
        warnings.filterwarnings("ignore", message="`ray_remote_args` is deprecated")
        return ds.map_batches(
            _node_tagged(model, "model"),
            fn_constructor_kwargs={**kwargs, "device": res.device, "num_threads": res.torch_threads},
            batch_size=None,
            compute=ray.data.ActorPoolStrategy(size=res.actors),
            scheduling_strategy=placement,
            num_cpus=res.actor_cpus,
            num_gpus=res.actor_gpus,
        )


def write_shards(
    ds: ray.data.Dataset,
    ledger: ShardLedger,
    shards: list[Shard],
    to_table: Callable[[dict[str, np.ndarray]], pa.Table],
    file_format: str = "parquet",
) -> int:
    """Stream ``ds`` through the shard writer, marking each shard once complete; returns rows processed."""
    ds = ds.map_batches(
        write_pieces,  # type: ignore[arg-type]  # ray's stub takes a one-argument fn; fn_kwargs gives the rest
        fn_kwargs={"table_dir": str(ledger.table_dir), "to_table": to_table, "file_format": file_format},
        batch_size=None,
        num_cpus=TASK_CPUS,
    )
    record_pieces(ds.iter_rows(), ledger, shards)
    return sum(shard.size for shard in shards)
