"""Keep Ray's, Tune's and MLflow's own log records off the console: they go to `<output>/logs/vse_ray.log`."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path

# "ray.data" configures its own console handler when imported (ray/data/_internal/logging.py): listed apart.
# "vse_ray.data": the precompute's notes (e.g. a reduced SVD size), recorded in the manifest as well.
LIBRARY_LOGGERS = (
    "ray",
    "ray.data",
    "ray.tune",
    "ray.train",
    "mlflow",
    "alembic",
    "urllib3",
    "filelock",
    "vse_ray.data",
)


def log_path(output_dir: str | Path) -> Path:
    """`<output_dir>/logs/vse_ray.log`, its folder created."""
    path = Path(output_dir).expanduser().resolve() / "logs" / "vse_ray.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def native_stderr_to_log(output_dir: str | Path) -> Iterator[Path]:
    """Inside the block, what native code writes to file descriptor 2 goes to the log file, not the console.

    Ray's core worker in this process (C++) and the Ray processes it starts write their warnings straight to
    descriptor 2, past Python's logging. Python's own `sys.stderr` (progress bars, error messages) keeps
    writing to the console through a duplicate of the original descriptor. For command-line entry points:
    it swaps process-wide descriptors, so it is not for use under a test runner that captures them.
    """
    path = log_path(output_dir)
    sys.stderr.flush()
    console = os.dup(2)
    log = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(log, 2)
    os.close(log)
    encoding = sys.stderr.encoding or "utf-8"
    saved, sys.stderr = sys.stderr, os.fdopen(os.dup(console), "w", buffering=1, encoding=encoding)
    try:
        yield path
    finally:
        sys.stderr.close()
        sys.stderr = saved
        os.dup2(console, 2)
        os.close(console)


def route_library_logs(output_dir: str | Path) -> Path:
    """Send the records of LIBRARY_LOGGERS to a log file in `output_dir` (not the console); returns it."""
    import ray.data  # noqa: F401  (installs Ray Data's console handler now, so that it is replaced below)

    path = log_path(output_dir)
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
