"""Actor pool plans on the shared 4-CPU local Ray instance."""

from __future__ import annotations

import pytest

from vse_ray.data.resources import ACTOR_CPUS, TASK_CPUS, plan_resources

pytestmark = pytest.mark.ray


def test_whole_cluster_pool_is_fixed(ray_session) -> None:
    res = plan_resources(None, "cnn_actors", blocks=10)
    assert res.pool_bounds == (4, 4)  # floor((4 - 0.25) / 0.75) = 5 fits, capped at one per CPU
    assert (res.actor_cpus, res.task_cpus, res.torch_threads, res.device) == (ACTOR_CPUS, TASK_CPUS, 1, "cpu")


def test_half_share_starts_small_and_may_grow_to_the_cluster(ray_session) -> None:
    res = plan_resources(None, "sbert_actors", blocks=10, cpu_share=0.5)
    assert res.pool_bounds == (2, 4)  # floor((2 - 0.25) / 0.75) = 2 at first, the whole node later


def test_pool_never_exceeds_the_blocks(ray_session) -> None:
    assert plan_resources(None, "cnn_actors", blocks=1, cpu_share=0.5).pool_bounds == (1, 1)
    assert plan_resources(None, "cnn_actors", blocks=3, cpu_share=0.5).pool_bounds == (2, 3)


def test_requested_size_is_fixed_and_checked(ray_session) -> None:
    assert plan_resources(3, "cnn_actors", blocks=10).pool_bounds == (3, 3)
    with pytest.raises(ValueError, match="cnn_actors=3 does not fit"):
        plan_resources(3, "cnn_actors", blocks=10, cpu_share=0.5)
