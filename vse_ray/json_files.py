"""Files written whole or not at all: a reader (or a rerun after SIGKILL) never sees half a file, and a
failed write (a full disk) leaves no partial one."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(path: Path, temporary: str | None = None) -> Iterator[Path]:
    """A hidden temporary file beside ``path`` to write in the block (``temporary``, default
    ``.<name>.<pid>.tmp``): renamed to ``path`` when the block ends, removed when it fails; a full disk's
    error that names no file then names ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(temporary or f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        if isinstance(err, OSError) and err.errno == errno.ENOSPC and not err.filename:
            raise OSError(err.errno, os.strerror(err.errno), str(path)) from err  # named for the error line
        raise


def write_json_atomic(data: dict, path: Path) -> None:
    """Write ``data`` to a hidden ``.<name>.<pid>.tmp`` beside ``path``, then rename it into place."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
