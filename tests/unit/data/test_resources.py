"""Actor pool plans on the shared 4-CPU local Ray instance."""

from __future__ import annotations

import pytest

from vse_ray.data.precompute.resources import ACTOR_CPUS, TASK_CPUS, plan_cpu_pool, plan_resources

pytestmark = pytest.mark.ray


def test_default_cpu_pool_shares_the_cores_by_threads(ray_session) -> None:
    res = plan_resources(None, "cnn_actors", blocks=10)
    # 4 CPUs: ceil(4 / 4) = 1 actor with 4 torch threads, holding half of them in Ray's accounting
    assert (res.actors, res.threads, res.torch_threads, res.device) == (1, 4, 4, "cpu")
    assert (res.actor_cpus, res.task_cpus) == (2.0, TASK_CPUS)


def test_requested_actors_split_the_threads(ray_session) -> None:
    res = plan_resources(2, "sbert_actors", blocks=10)
    assert (res.actors, res.threads, res.actor_cpus) == (2, 2, 1.0)
    res = plan_resources(5, "sbert_actors", blocks=10)  # floor((4 - 0.25) / 0.75) = 5 fit
    assert (res.actors, res.threads, res.actor_cpus) == (5, 1, ACTOR_CPUS)


def test_requested_actors_that_do_not_fit_are_refused(ray_session) -> None:
    with pytest.raises(ValueError, match="cnn_actors=6 does not fit the cluster's 4 CPUs"):
        plan_resources(6, "cnn_actors", blocks=10)


def test_pool_leaves_room_for_tasks(ray_session) -> None:
    for requested in (None, 1, 2, 3, 4, 5):
        res = plan_resources(requested, "cnn_actors", blocks=10)
        assert res.actors * res.actor_cpus + TASK_CPUS <= 4


@pytest.mark.parametrize(
    "cpus, node_cores, actors, threads",
    [
        (2, 2, 1, 2),  # one node of 2 CPUs: one actor with both cores
        (2, 1, 2, 1),  # two nodes of 1 CPU: an actor on each, not one actor with a core it lacks
        (4, 2, 2, 2),  # two nodes of 2 CPUs: one 2-thread actor per node
        (4, 4, 1, 4),
        (8, 8, 2, 4),  # MAX_ACTOR_THREADS caps the threads of an actor
        (64, 16, 16, 4),
    ],
)
def test_default_cpu_pool_uses_every_node(cpus, node_cores, actors, threads) -> None:
    res = plan_cpu_pool(cpus, node_cores, None, "cnn_actors", blocks=100)
    assert (res.actors, res.threads) == (actors, threads)
    assert res.actor_cpus <= node_cores  # an actor fits on one node
    assert res.actors * res.actor_cpus + TASK_CPUS <= cpus


def test_default_cpu_pool_has_no_more_actors_than_blocks() -> None:
    assert plan_cpu_pool(4, 1, None, "cnn_actors", blocks=3).actors == 3
