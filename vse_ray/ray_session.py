"""One way for every entry point to get a Ray instance: join the running cluster, else start a local one."""

from __future__ import annotations

from typing import Any

import ray


def ensure_ray(address: str | None = None, **init_kwargs: Any) -> None:
    """Connect to the cluster at ``address`` (or ``RAY_ADDRESS``, or the latest local one), else start Ray.

    Does nothing when this process already holds a Ray instance. ``init_kwargs`` go to ``ray.init``
    (resources of a local instance, e.g. ``num_cpus``); driver logs stay out of the console.
    """
    if not ray.is_initialized():
        ray.init(address=address, **{"log_to_driver": False, **init_kwargs})
