"""Ray resources of the precompute stages: actor pools that use every core and cannot deadlock."""

from __future__ import annotations

import math
from dataclasses import dataclass

import ray

MAX_ACTOR_THREADS = 4  # torch intra-op threads per CPU actor; beyond that, more actors
ACTOR_CPUS = 0.75  # the least a CPU actor may hold
TASK_CPUS = 0.25  # a decode or write task; the pools always leave this much free


@dataclass(frozen=True)
class StageResources:
    """Pool size, per-actor resources and torch threads of one model stage."""

    actors: int
    actor_cpus: float
    actor_gpus: float
    task_cpus: float
    threads: int = 1

    @property
    def device(self) -> str:
        return "cuda" if self.actor_gpus else "cpu"

    @property
    def torch_threads(self) -> int | None:
        return None if self.actor_gpus else self.threads


def plan_resources(requested_actors: int | None, what: str, blocks: int | None = None) -> StageResources:
    """One actor per GPU when the cluster has GPUs; on CPUs, :func:`plan_cpu_pool` for the cluster's nodes.

    Args:
        requested_actors: Pool size asked for, or None for the default.
        what: Name of the option, for messages.
        blocks: Blocks the stage will process (each actor loads a model: no more actors than blocks).
    """
    resources = ray.cluster_resources()
    cpus, gpus = resources.get("CPU", 0.0), int(resources.get("GPU", 0))
    if gpus:
        actors = requested_actors or min(gpus, blocks or gpus)
        if actors > gpus:
            raise ValueError(f"{what}={actors} exceeds the cluster's {gpus} GPUs")
        return StageResources(actors=actors, actor_cpus=1.0, actor_gpus=1.0, task_cpus=1.0)
    node_cores = [int(n["Resources"].get("CPU", 0)) for n in ray.nodes() if n["Alive"]]
    return plan_cpu_pool(cpus, max(node_cores, default=int(cpus)), requested_actors, what, blocks)


def plan_cpu_pool(
    cpus: float, node_cores: int, requested_actors: int | None, what: str, blocks: int | None = None
) -> StageResources:
    """A few actors sharing the cores by threads: at most one node's cores and :data:`MAX_ACTOR_THREADS` each.

    The default pool has ceil(CPUs / threads) actors (never more than there are blocks), each running torch
    with ``threads = min(MAX_ACTOR_THREADS, node_cores)`` threads: one model copy per few cores starts faster
    and scales better than one single-threaded process per core (docs/performance.md), and since an actor
    runs on one node, a cluster of small nodes gets one actor per node rather than one actor with the threads
    of a core it does not have (two 1-CPU nodes: 2 actors of 1 thread, not 1 actor). In Ray's accounting an
    actor holds half its threads' CPUs: the decode and write tasks that run between its batches take the rest,
    so they never queue behind the pool (a pool holding every CPU hangs the stream; one holding all but a
    task's share stalls on its writes).

    Args:
        cpus: CPUs of the cluster.
        node_cores: CPUs of its largest node.
        requested_actors, what, blocks: as in :func:`plan_resources`.
    """
    fit = max(1, math.floor((cpus - TASK_CPUS) / ACTOR_CPUS))
    if requested_actors and requested_actors > fit:
        raise ValueError(
            f"{what}={requested_actors} does not fit the cluster's {cpus:g} CPUs (at most {fit})"
        )
    cores = max(1, int(cpus))
    most_threads = max(1, min(MAX_ACTOR_THREADS, node_cores))
    default = math.ceil(cores / most_threads)
    actors = requested_actors or min(default, blocks or default)
    threads = max(1, min(cores // actors, most_threads))
    return StageResources(
        actors=actors,
        actor_cpus=max(ACTOR_CPUS, threads / 2),
        actor_gpus=0.0,
        task_cpus=TASK_CPUS,
        threads=threads,
    )
