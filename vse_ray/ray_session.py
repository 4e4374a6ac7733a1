"""One way for every entry point to get a Ray instance: join the running cluster, else start a local one."""

from __future__ import annotations

import os
import sys
from typing import Any

import ray
import ray.data

from vse_ray.ray_reaper import start_reaper

# `ray.init` keywords of a local instance only, and the start of Ray's refusal of them for a running one.
LOCAL_ONLY = ("num_cpus", "num_gpus", "resources", "labels", "object_store_memory", "_system_config")
EXISTING_CLUSTER = "When connecting to an existing cluster"


def ensure_ray(address: str | None = None, **init_kwargs: Any) -> None:
    """Connect to the cluster at ``address`` (or ``RAY_ADDRESS``, or the latest local one), else start Ray.

    Does nothing when this process already holds a Ray instance. ``init_kwargs`` go to ``ray.init``
    (resources of a local instance, e.g. ``num_cpus``: left out when a running instance is joined, which
    keeps its own). Workers' output stays off the driver's console
    (``log_to_driver=False``; it is in Ray's session logs) and Ray Data's progress is set up as
    :func:`plain_data_progress` says. Its workers run at the driver's priority, and the Ray Train runs it
    fits see a finished run sooner (see below). A local instance started here is watched by
    :mod:`vse_ray.ray_reaper`: it goes away with this process, even when the process is killed with SIGKILL.
    """
    plain_data_progress()
    if ray.is_initialized():
        return
    # Ray starts its worker processes at nice +15 (its `worker_niceness`), below every other process of the
    # machine: on a loaded machine a training worker then gets a fraction of the CPU an equal plain process
    # gets (a VSE∞ step ran 3x slower than the official code's beside it). A local instance started here runs
    # its workers at the driver's priority, as Ray's job submission does for its drivers; a cluster already
    # running keeps its own setting, and RAY_worker_niceness set by the user wins.
    os.environ.setdefault("RAY_worker_niceness", "0")
    # Ray Train's controller polls its workers every 2 s by default: a finished run waited up to that long to
    # be seen. Ray Train hands this variable from the driver to each run's controller, so every run fitted
    # from this process polls every 0.5 s (a few small calls a second), on a cluster too, unless the user
    # set it.
    os.environ.setdefault("RAY_TRAIN_HEALTH_CHECK_INTERVAL_S", "0.5")
    # A local instance has no dashboard (13 processes and 1.2 GB of memory that a laptop run spends better);
    # to watch one, start Ray yourself (`ray start --head`) and give its address.
    options = {"log_to_driver": False, "include_dashboard": False, **init_kwargs}
    try:
        ray.init(address=address, **options)
    except ValueError as err:
        # Ray refuses a local instance's resources when it finds a running instance to join instead (the
        # `ray start` of this machine, RAY_ADDRESS), before it connects: join it as it is
        if EXISTING_CLUSTER not in str(err):
            raise
        ray.init(address=address, **{k: v for k, v in options.items() if k not in LOCAL_ONLY})
    start_reaper()


def plain_data_progress() -> None:
    """Ray Data progress of this process as plain log lines, never redrawn bars.

    Ray 2.60 logs progress through the ``ray.data`` logger (one block every
    ``RAY_DATA_NON_TTY_PROGRESS_LOG_INTERVAL`` s) when stdout is not a terminal, and draws tqdm bars on
    stderr when it is: there they are turned off (a command's console carries vse_ray's lines only; the
    ``ray.data`` logger still records each dataset's start and end). ``DataContext`` is per process; vse_ray
    runs Ray Data in the driver only (precompute), so this is set where Ray is started.
    """
    context = ray.data.DataContext.get_current()
    context.use_ray_tqdm = False  # tqdm_ray sends bar frames to the driver instead of log lines
    context.enable_rich_progress_bars = False
    context.enable_progress_bars = not sys.stdout.isatty()
