"""The Ray cluster a command would join, found as ``ray.init()`` finds it but without importing Ray (whose
import takes about a second of a short run's start)."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def _ray_temp_dir() -> Path:
    """Ray's temporary folder: ``RAY_TMPDIR``, else (Linux) ``TMPDIR``, else ``/tmp``, then ``ray``."""
    if "RAY_TMPDIR" in os.environ:
        return Path(os.environ["RAY_TMPDIR"]) / "ray"
    if sys.platform.startswith("linux") and "TMPDIR" in os.environ:
        return Path(os.environ["TMPDIR"]) / "ray"
    return Path("/tmp/ray")


def cluster_address(address: str | None = None) -> str | None:
    """``address``, else ``RAY_ADDRESS`` (set by ``ray job submit`` for its entrypoint), else the cluster of
    this machine's last ``ray start`` (Ray's ``ray_current_cluster`` file); None: ``ray.init()`` would
    start a local instance of its own."""
    if address:
        return address
    if os.environ.get("RAY_ADDRESS"):
        return os.environ["RAY_ADDRESS"]
    current = _ray_temp_dir() / "ray_current_cluster"
    try:
        return current.read_text().strip() or None
    except OSError:
        return None
