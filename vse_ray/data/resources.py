"""Ray resources of the precompute stages: actor pool sizes and CPU shares that cannot deadlock."""

from __future__ import annotations

import math
from dataclasses import dataclass

import ray

ACTOR_CPUS = 0.75  # a CPU actor runs torch with one thread; the rest is left to decode/write tasks
TASK_CPUS = 0.25


@dataclass(frozen=True)
class StageResources:
    """Pool size (``actors``, growing to ``max_actors``) and per-actor / per-task resources of a stage."""

    actors: int
    actor_cpus: float
    actor_gpus: float
    task_cpus: float
    max_actors: int = 0

    @property
    def pool_bounds(self) -> tuple[int, int]:
        """(min, max) pool size; max is never below min."""
        return self.actors, max(self.actors, self.max_actors)

    @property
    def device(self) -> str:
        return "cuda" if self.actor_gpus else "cpu"

    @property
    def torch_threads(self) -> int | None:
        return None if self.actor_gpus else 1


def plan_resources(
    requested_actors: int | None, what: str, blocks: int | None = None, cpu_share: float = 1.0
) -> StageResources:
    """One actor per GPU when the cluster has GPUs, else one per CPU, never more than there are blocks.

    CPU actors take :data:`ACTOR_CPUS` and tasks :data:`TASK_CPUS`, so the pool always leaves room for the
    decode and write tasks (a pool holding every CPU would hang the stream on a small node). A stage that
    starts on a share of the CPUs may grow to the whole cluster once the CPUs are free again (the other
    stage is done), so neither stage leaves cores idle at its end.

    Args:
        requested_actors: Pool size asked for, or None for the default.
        what: Name of the option, for messages.
        blocks: Blocks the stage will process (each actor loads a model: no more actors than blocks).
        cpu_share: Fraction of the cluster's CPUs this stage may use (stages that run side by side).
    """
    resources = ray.cluster_resources()
    cpus, gpus = resources.get("CPU", 0.0), int(resources.get("GPU", 0))
    if gpus:
        actors = requested_actors or min(gpus, blocks or gpus)
        if actors > gpus:
            raise ValueError(f"{what}={actors} exceeds the cluster's {gpus} GPUs")
        return StageResources(actors=actors, actor_cpus=1.0, actor_gpus=1.0, task_cpus=1.0)
    fit = max(1, math.floor((cpus * cpu_share - TASK_CPUS) / ACTOR_CPUS))
    fit_all = max(1, math.floor((cpus - TASK_CPUS) / ACTOR_CPUS))
    actors = requested_actors or min(fit, max(1, int(cpus)), blocks or fit)
    if actors > fit:
        raise ValueError(f"{what}={actors} does not fit the cluster's {cpus:g} CPUs (at most {fit})")
    grow_to = requested_actors or min(fit_all, max(1, int(cpus)), blocks or fit_all)
    return StageResources(
        actors=actors, actor_cpus=ACTOR_CPUS, actor_gpus=0.0, task_cpus=TASK_CPUS, max_actors=grow_to
    )
