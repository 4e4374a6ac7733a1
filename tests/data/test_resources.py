"""Actor pool plans on the shared 4-CPU local Ray instance."""

from __future__ import annotations

import pytest

from vse_ray.data.resources import ACTOR_CPUS, TASK_CPUS, plan_resources

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
