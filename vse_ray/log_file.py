"""Keep Ray's, Tune's and MLflow's own log records off the console: they go to `<output>/logs/vse_ray.log`."""

from __future__ import annotations

import logging
import os
from pathlib import Path

# "ray.data" configures its own console handler when imported (ray/data/_internal/logging.py): listed apart.
LIBRARY_LOGGERS = ("ray", "ray.data", "ray.tune", "ray.train", "mlflow", "alembic", "urllib3", "filelock")


def route_library_logs(output_dir: str | Path) -> Path:
    """Send the records of LIBRARY_LOGGERS to a log file in `output_dir` (not the console); returns it."""
    import ray.data  # noqa: F401  (installs Ray Data's console handler now, so that it is replaced below)

    path = Path(output_dir).expanduser().resolve() / "logs" / "vse_ray.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    for name in LIBRARY_LOGGERS:
        logger = logging.getLogger(name)
        for old in list(logger.handlers):
            if isinstance(old, logging.StreamHandler) and not isinstance(old, logging.FileHandler):
                logger.removeHandler(old)
        logger.addHandler(handler)
        logger.propagate = False
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")  # with verbose=0: no experiment boxes on the console
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    return path
