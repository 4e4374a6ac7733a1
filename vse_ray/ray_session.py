"""One way for every entry point to get a Ray instance: join the running cluster, else start a local one."""

from __future__ import annotations

import logging
from typing import Any

import ray
import ray.data

from vse_ray.ray_reaper import start_reaper


def ensure_ray(address: str | None = None, **init_kwargs: Any) -> None:
    """Connect to the cluster at ``address`` (or ``RAY_ADDRESS``, or the latest local one), else start Ray.

    Does nothing when this process already holds a Ray instance. ``init_kwargs`` go to ``ray.init``
    (resources of a local instance, e.g. ``num_cpus``); driver logs stay out of the console. A local
    instance started here is watched by :mod:`vse_ray.ray_reaper`: it goes away with this process, even
    when the process is killed with SIGKILL.
    """
    if ray.is_initialized():
        return
    ray.init(address=address, **{"log_to_driver": False, **init_kwargs})
    start_reaper()


def quiet_console() -> None:
    """Keep Ray's own log lines and Ray Data progress bars off the driver's console (warnings stay)."""
    ray.data.DataContext.get_current().enable_progress_bars = False
    for name in ("ray.data", "ray.train", "ray.tune"):
        logging.getLogger(name).setLevel(logging.WARNING)
