"""The one wrapper of every `vse-ray` command: expected input errors become a short message, not a traceback.

An expected error is bad input the user can fix: a ``ValueError`` from our checks (``json.JSONDecodeError``
and ``UnicodeDecodeError`` are ValueErrors too) or a missing/unreadable file. It prints ``error: <message>``
(naming the file, key, row or parameter) and a hint, and exits with code 2. ``--debug`` shows the full
traceback instead; any other exception keeps its traceback, except a full disk (ENOSPC), shown as one line
naming the file, Ray's memory monitor killing a worker (the node ran low on memory) and a local Ray instance
that did not start in Ray's fixed 30 s (a loaded machine) and a tracking server that stopped answering, each
shown as one line with the resume hint (exit code 1). Ctrl-C prints one line saying how to resume and exits
with code 130; SIGTERM (a scheduler's or ``kill``'s stop) is handled the same way and exits with code 143.
"""

from __future__ import annotations

import functools
import inspect
import signal
import threading
from collections.abc import Callable
from typing import Annotated, Any

import typer

from vse_ray.cli.options import with_parameters
from vse_ray.disk_full import ADVICE as DISK_FULL_ADVICE
from vse_ray.disk_full import disk_full_value_error
from vse_ray.file_lock import release_all
from vse_ray.tracking.outage import TrackingUnavailable

EXPECTED = (ValueError, FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError)
EXIT_CODE = 2
INTERRUPTED_CODE = 130  # 128 + SIGINT, as a shell reports a command stopped by Ctrl-C
TERMINATED_CODE = 143  # 128 + SIGTERM
MEMORY_CODE = 1
MEMORY_ADVICE = (
    "Ray killed a worker: the node ran low on memory (other programs count too); run fewer trials at once "
    "(resources.concurrent, --num-cpus) or free memory, then"
)
RAY_START_CODE = 1
RAY_START_ADVICE = (
    "Ray's local instance did not start: its raylet did not register within Ray's fixed 30 s (a loaded "
    "machine can take longer); when the machine is less busy,"
)
TRACKING_CODE = 1  # a tracking server that stopped answering: not bad input
RESUME_HINTS = {
    "precompute": "run the same command again to resume: finished shards are kept",
    "train": "run the same command again to resume from the last checkpoint (the MLflow run is KILLED)",
    "sweep": "run the same command again to resume: ended trials are kept",
    "study": "run the same command again to resume: finished runs are kept",
}


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread: the command stops as for Ctrl-C (runs marked KILLED, checkpoints
    kept)."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise Terminated


def terminated(err: BaseException) -> bool:
    """Whether ``err`` stops the command for SIGTERM: ours (:class:`Terminated`, maybe re-raised as a
    KeyboardInterrupt), or Ray's own handler, which ``ray.init`` installs: ``sys.exit(SIGTERM)``."""
    return _in_chain(
        err,
        lambda item: (
            isinstance(item, Terminated) or (isinstance(item, SystemExit) and item.code == signal.SIGTERM)
        ),
    )


def expected_error(err: BaseException) -> BaseException | None:
    """The user-facing error inside ``err`` (Ray task and Train worker errors unwrapped), or None."""
    for _ in range(5):
        if isinstance(err, EXPECTED):
            cause = getattr(err, "cause", None)  # RayTaskError(ValueError) carries the original as .cause
            return cause if isinstance(cause, EXPECTED) else err
        failures = getattr(err, "worker_failures", None)  # ray.train.WorkerGroupError
        inner = next(iter(failures.values()), None) if isinstance(failures, dict) and failures else None
        inner = inner or getattr(err, "cause", None)
        if inner is None:
            return None
        err = inner
    return None


def memory_killed(err: BaseException) -> bool:
    """Whether Ray's memory monitor killed a worker somewhere in ``err``'s chain (Tune wraps it in a
    RuntimeError; Ray task errors carry it as ``.cause``)."""
    return _in_chain(
        err, lambda item: type(item).__name__ == "OutOfMemoryError" or "running low on memory" in str(item)
    )


def ray_start_timed_out(err: BaseException) -> bool:
    """Whether a local Ray instance failed to start in time somewhere in ``err``'s chain (Ray waits 30 s for
    its raylet to register, a fixed wait that a loaded machine can pass)."""
    return _in_chain(err, lambda item: "timed out during startup" in str(item))


def _in_chain(err: BaseException, found: Callable[[BaseException], bool]) -> bool:
    """Whether ``found`` holds for ``err`` or an exception it links (cause, context, Ray's ``.cause``)."""
    seen: set[int] = set()
    stack: list[BaseException] = [err]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if found(item):
            return True
        linked = (item.__cause__, item.__context__, getattr(item, "cause", None))
        stack += [e for e in linked if isinstance(e, BaseException)]
    return False


def readable_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """``command`` with a ``--debug`` option; expected errors print one line and exit 2 (see module doc)."""

    @functools.wraps(command)
    def wrapper(*args: Any, debug: bool = False, **kwargs: Any) -> Any:
        resume_hint = RESUME_HINTS.get(command.__name__, "run the same command again")
        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGTERM, _on_sigterm) if main else None
        try:
            return command(*args, **kwargs)
        except (KeyboardInterrupt, SystemExit) as stop:
            sigterm = terminated(stop)
            if debug or not (sigterm or isinstance(stop, KeyboardInterrupt)):
                raise
            typer.echo(f"stopped by {'SIGTERM' if sigterm else 'Ctrl-C'}: {resume_hint}", err=True)
            raise typer.Exit(code=TERMINATED_CODE if sigterm else INTERRUPTED_CODE) from None
        except Exception as err:
            shown = expected_error(err) or disk_full_value_error(err, DISK_FULL_ADVICE)
            if not debug and shown is None and memory_killed(err):
                typer.echo(f"error: {MEMORY_ADVICE} {resume_hint}", err=True)
                raise typer.Exit(code=MEMORY_CODE) from None
            if not debug and shown is None and ray_start_timed_out(err):
                typer.echo(f"error: {RAY_START_ADVICE} {resume_hint}", err=True)
                raise typer.Exit(code=RAY_START_CODE) from None
            if not debug and isinstance(err, TrackingUnavailable):
                typer.echo(f"error: {err}", err=True)
                raise typer.Exit(code=TRACKING_CODE) from None
            if debug or shown is None:
                raise
            typer.echo(f"error: {shown}", err=True)
            typer.echo("(run again with --debug for the full traceback)", err=True)
            raise typer.Exit(code=EXIT_CODE) from None
        finally:
            release_all()  # the output folders this command locked
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)

    debug = inspect.Parameter(
        "debug",
        inspect.Parameter.KEYWORD_ONLY,
        default=False,
        annotation=Annotated[bool, typer.Option("--debug", help="Show the full traceback of an error.")],
    )
    return with_parameters(wrapper, command, [debug])
