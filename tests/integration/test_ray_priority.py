"""A local Ray instance that vse_ray starts runs its workers at the driver's priority, not at nice +15."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.ray

DRIVER = """
import json, os, ray
from vse_ray.ray_session import ensure_ray
ensure_ray("local", num_cpus=1, include_dashboard=False, object_store_memory=80 * 1024**2)
worker = ray.get(ray.remote(lambda: os.nice(0)).remote())
print(json.dumps({"driver": os.nice(0), "worker": worker}), flush=True)
ray.shutdown()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Ray's worker niceness is set on Linux")
def test_local_workers_run_at_the_drivers_priority():
    env = {k: v for k, v in os.environ.items() if k != "RAY_worker_niceness"}
    env.update(RAY_ADDRESS="", PYTHONPATH=str(Path(__file__).parents[2]))
    done = subprocess.run(
        [sys.executable, "-c", DRIVER], capture_output=True, text=True, env=env, timeout=240, check=True
    )
    nice = json.loads(done.stdout.strip().splitlines()[-1])
    assert nice["worker"] == nice["driver"]
