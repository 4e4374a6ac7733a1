"""A full disk is an expected error: one line naming the folder and what to do, not a long traceback."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_MESSAGE = "No space left on device"  # strerror(ENOSPC), also in Ray errors that lost the OSError type


def disk_full_error(err: BaseException) -> BaseException | None:
    """The ENOSPC error in ``err`` or an error it wraps (causes, contexts, Ray's ``.cause``), or None."""
    stack: list[BaseException | None] = [err]
    seen: set[int] = set()
    while stack:
        current = stack.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if (isinstance(current, OSError) and current.errno == errno.ENOSPC) or _MESSAGE in str(current):
            return current
        stack += [current.__cause__, current.__context__, getattr(current, "cause", None)]
    return None


def is_disk_full(err: BaseException) -> bool:
    """Whether ``err`` or an error it wraps is ENOSPC."""
    return disk_full_error(err) is not None


def disk_full_value_error(err: BaseException, advice: str) -> ValueError | None:
    """``no space left on device writing <file>: <advice>`` when ``err`` wraps ENOSPC, else None."""
    found = disk_full_error(err)
    if found is None:
        return None
    filename = getattr(found, "filename", None)
    return ValueError(f"no space left on device{f' writing {filename}' if filename else ''}: {advice}")


@contextmanager
def disk_full_is_an_error(folder: str | Path, advice: str) -> Iterator[None]:
    """Turn ENOSPC raised inside the block into a ValueError naming ``folder`` and ``advice``."""
    try:
        yield
    except Exception as err:
        if not is_disk_full(err):
            raise
        raise ValueError(f"no space left on device writing {folder}: {advice}") from err
