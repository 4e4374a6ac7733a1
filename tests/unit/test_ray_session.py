"""ensure_ray joins a running instance with the resources of a local one left out.

A real `ray start` instance cannot run here: every other Ray command of the machine would join it
(`/tmp/ray/ray_current_cluster`). `ray.init` is replaced by one that answers as Ray does: it refuses a local
instance's resources when it finds an instance to join, before connecting.
"""

from __future__ import annotations

import pytest

import vse_ray.ray_session as session


@pytest.fixture()
def running_instance(monkeypatch):
    calls: list[dict] = []

    def init(address=None, **kwargs):
        calls.append(kwargs)
        if "num_cpus" in kwargs:
            raise ValueError(
                "When connecting to an existing cluster, num_cpus and num_gpus must not be provided."
            )

    monkeypatch.setattr(session.ray, "is_initialized", lambda: False)
    monkeypatch.setattr(session.ray, "init", init)
    monkeypatch.setattr(session, "start_reaper", lambda: None)
    monkeypatch.setattr(session, "plain_data_progress", lambda: None)
    return calls


def test_a_running_instance_is_joined_as_it_is(running_instance):
    session.ensure_ray(num_cpus=2, object_store_memory=400 * 1024**2)
    first, joined = running_instance
    assert first["num_cpus"] == 2 and "num_cpus" not in joined and "object_store_memory" not in joined
    assert joined["log_to_driver"] is False  # the rest of the options kept


def test_other_refusals_are_raised(monkeypatch, running_instance):
    def init(address=None, **kwargs):
        raise ValueError("Invalid address format: x")

    monkeypatch.setattr(session.ray, "init", init)
    with pytest.raises(ValueError, match="Invalid address"):
        session.ensure_ray("x", num_cpus=2)
