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
HANDLER_NAME = "vse_ray.log_file"  # the file handler route_library_logs adds, found again by this name


class _LogFile(logging.FileHandler):
    """The log file. A record it cannot write (a full disk) is dropped, not printed to the console as
    Python's ``--- Logging error ---`` traceback: the command's own error names the full disk."""

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 (logging's name)
        if not isinstance(sys.exc_info()[1], OSError):
            super().handleError(record)


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


def _import_logging_libraries(ray_data: bool = True) -> None:
    """Import the libraries that set their loggers' handlers on import: nothing replaces ours later
    (``ray_data`` False: a command that starts no Ray leaves out Ray Data's import, a second of its start)."""
    import mlflow  # noqa: F401  (sets the handlers of its loggers and alembic's)

    if ray_data:
        import ray.data  # noqa: F401  (installs Ray Data's console handler)


def route_library_logs(output_dir: str | Path, ray_data: bool = True) -> Path:
    """Send the records of LIBRARY_LOGGERS to a log file in `output_dir` (not the console); returns it.

    Called again (another output folder, a second command in one process), it replaces the file it added
    before instead of adding a second one. ``ray_data`` False: for a command that starts no Ray.
    """
    _import_logging_libraries(ray_data)
    path = log_path(output_dir)
    handler = _LogFile(path)
    handler.set_name(HANDLER_NAME)
    handler.setLevel(logging.INFO)  # Ray Data's logger passes DEBUG records (e.g. the whole DataContext)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    for name in LIBRARY_LOGGERS:
        logger = logging.getLogger(name)
        for old in list(logger.handlers):
            ours = old.get_name() == HANDLER_NAME
            if ours or (isinstance(old, logging.StreamHandler) and not isinstance(old, logging.FileHandler)):
                logger.removeHandler(old)
                if ours:
                    old.close()
        logger.addHandler(handler)
        logger.propagate = False
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")  # with verbose=0: no experiment boxes on the console
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")  # its "🏃 View run" lines
    return path


@contextlib.contextmanager
def loggers_restored(ray_data: bool = True) -> Iterator[None]:
    """After the block, LIBRARY_LOGGERS have the handlers and propagate flags they had before it (the log
    file that :func:`route_library_logs` added inside is closed; ``ray_data`` as there)."""
    _import_logging_libraries(ray_data)
    saved = [
        (logger, list(logger.handlers), logger.propagate)
        for logger in map(logging.getLogger, LIBRARY_LOGGERS)
    ]
    try:
        yield
    finally:
        for logger, handlers, propagate in saved:
            for handler in logger.handlers:
                if handler.get_name() == HANDLER_NAME:
                    handler.close()
            logger.handlers, logger.propagate = handlers, propagate


@contextlib.contextmanager
def command_log(output_dir: str | Path, ray_data: bool = True) -> Iterator[Path]:
    """The console of a command-line entry point inside the block: vse_ray's lines only.

    Ray's and MLflow's log records (Ray Data's progress lines among them) and what native code writes to
    descriptor 2 go to `<output_dir>/logs/vse_ray.log` (yielded). Process-wide (descriptor 2, the library
    loggers); both are as before once the block ends (a command run in-process, e.g. by a test).
    ``ray_data`` False: the block starts no Ray (a training in this process), so Ray Data is not imported.
    """
    with loggers_restored(ray_data), native_stderr_to_log(output_dir) as path:
        route_library_logs(output_dir, ray_data)
        yield path


def log_file_line(path: Path) -> str:
    """The console line that says where Ray's and MLflow's log lines are."""
    return f"Ray and MLflow logs: {path}"
