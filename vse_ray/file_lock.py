"""One writer per folder (a run's, or an output folder's): an exclusive lock file that names its holder.

The lock is ``fcntl.flock`` on ``<folder>/.vse_ray.lock``: the kernel drops it when the holder exits, however
it ends, so the lock of a dead process is taken over without a stale-lock check. The file's content (PID,
host, start time) is only for the message a second command prints.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

LOCK_NAME = ".vse_ray.lock"
_HELD: list[FolderLock] = []  # locks taken by this process and not yet released


def _holder(path: Path) -> str:
    """``PID <pid> on <host> since <time>`` from the lock file, or what is known of it."""
    try:
        info = json.loads(path.read_text())
        since = time.strftime("%H:%M:%S", time.localtime(info["started"]))
        return f"PID {info['pid']} on {info['host']} since {since}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process (its PID is not recorded yet)"


class FolderLock:
    """Exclusive lock on a folder, held until :meth:`release` or the end of the process."""

    def __init__(
        self, folder: str | Path, what: str = "folder", instead: str = "choose another --output-dir"
    ):
        self.folder = Path(folder)
        self.path = self.folder / LOCK_NAME
        self.what = what
        self.instead = instead
        self._handle: IO[str] | None = None

    def share(self) -> FolderLock:
        """Take the lock shared, as a reader that writes nothing in the folder: readers exclude a writer
        (:meth:`acquire`), not each other. Nothing is taken when the folder has no lock file (a folder no
        writer locked yet).

        Raises:
            ValueError: The writer holds it, named.
        """
        try:
            handle = open(self.path)  # noqa: SIM115 (kept open: the lock lives as long as the handle)
        except OSError:
            return self
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise ValueError(
                f"{self.what} is being written by {_holder(self.path)}: wait for it to finish, then "
                "run the same command again"
            ) from None
        self._handle = handle
        _HELD.append(self)
        return self

    def acquire(self, wait: bool = False, notify: Callable[[str], None] = print) -> FolderLock:
        """Take the lock; ValueError naming the holder when it is held, or (``wait``) wait for it."""
        self.folder.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+")  # noqa: SIM115 (kept open: the lock lives as long as the handle)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(self.path)
            if not wait:
                handle.close()
                raise ValueError(
                    f"{self.what} is in use by {holder}: wait for it to finish, rerun with --wait to queue "
                    f"behind it, or {self.instead}"
                ) from None
            notify(f"waiting for {holder} to release {self.what} ...")
            fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()}))
        handle.flush()
        self._handle = handle
        _HELD.append(self)
        return self

    def release(self) -> None:
        """Give the lock back (the file stays: removing it would race with a waiting process)."""
        if self._handle is not None:
            fcntl.flock(self._handle, fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None
            _HELD.remove(self)

    def __enter__(self) -> FolderLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def release_all() -> None:
    """Release every lock this process holds (a command's locks end with the command)."""
    for lock in list(_HELD):
        lock.release()
