"""A full disk is an expected error: one line naming the file and what to do, not a long traceback."""

from __future__ import annotations

import errno
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ADVICE = "free space and run the same command again to resume"
_ENOSPC = "No space left on device"  # strerror(ENOSPC), also in Ray errors that lost the OSError type
SQLITE_FULL = "database or disk is full"  # SQLite's SQLITE_FULL (a local MLflow store), which names no file


def disk_full_error(err: BaseException) -> BaseException | None:
    """The ENOSPC (or SQLITE_FULL) error in ``err`` or an error it wraps (causes, contexts, Ray's
    ``.cause``), or None; one that names its file first."""
    stack: list[BaseException | None] = [err]
    seen: set[int] = set()
    found: list[BaseException] = []
    while stack:
        current = stack.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno == errno.ENOSPC:
            found.append(current)
        elif any(message in str(current) for message in (_ENOSPC, SQLITE_FULL)):
            found.append(current)
        stack += [current.__cause__, current.__context__, getattr(current, "cause", None)]
    return next((e for e in found if _filename(e)), found[0] if found else None)


def _filename(err: BaseException) -> str | None:
    """The file an ENOSPC error names: its ``filename``, or the one in its text when Ray passed it on as
    text (``[Errno 28] No space left on device: '/out/features/…'``)."""
    filename = getattr(err, "filename", None)
    if filename:
        return str(filename)
    named = re.search(rf"{_ENOSPC}: '([^']+)'", str(err))
    return named[1] if named else None


def is_disk_full(err: BaseException) -> bool:
    """Whether ``err`` or an error it wraps is ENOSPC."""
    return disk_full_error(err) is not None


def disk_full_value_error(
    err: BaseException, advice: str = ADVICE, store: Path | None = None, folder: str | Path | None = None
) -> ValueError | None:
    """``no space left on device writing <file>: <advice>`` when ``err`` wraps ENOSPC, else None.

    The file is the one the error names; else ``store`` (the local MLflow store) for SQLITE_FULL, else
    ``folder`` (where the failed write went).
    """
    found = disk_full_error(err)
    if found is None:
        return None
    filename: str | Path | None = _filename(found)
    if filename is None:
        filename = store if store is not None and SQLITE_FULL in str(found) else folder
    return ValueError(f"no space left on device{f' writing {filename}' if filename else ''}: {advice}")


@contextmanager
def disk_full_is_an_error(
    folder: str | Path | None, advice: str = ADVICE, store: Path | None = None
) -> Iterator[None]:
    """Turn ENOSPC raised inside the block into a ValueError naming the file (see
    :func:`disk_full_value_error`: the error's file, else ``store`` or ``folder``) and ``advice``."""
    try:
        yield
    except Exception as err:
        full = disk_full_value_error(err, advice, store, folder)
        if full is None:
            raise
        raise full from err
