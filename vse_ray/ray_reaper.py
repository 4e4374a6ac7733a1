"""Watchdog of a local Ray instance started by a vse_ray driver: when the driver dies, even by SIGKILL,
every process it started (gcs_server, raylet, dashboard and runtime-env agents, workers) is killed.

Ray binds gcs_server and raylet to the driver (the kernel kills them with it), but the agents and workers
that the raylet starts outlive it, re-parented to init, and ignore SIGTERM. The watchdog runs in its own
session (so a signal to the driver's process group spares it), reads a pipe that only the driver holds
open, and records the driver's descendants from ``/proc`` every second; when the pipe closes (the driver
exited or was killed) it SIGKILLs the last recorded set. Linux only (``/proc``); elsewhere it does nothing.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

POLL_SECONDS = 1.0
_OPEN_WHILE_ALIVE: list[int] = []


def _process_table() -> dict[int, tuple[int, str]]:
    """{pid: (parent pid, start time)} of every process, read from /proc."""
    table = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            table[int(entry.name)] = (int(fields[1]), fields[19])
    return table


def descendants(root: int) -> dict[int, str]:
    """{pid: start time} of every descendant of ``root`` (start times tell a reused pid apart)."""
    table = _process_table()
    found: dict[int, str] = {}
    frontier = {root}
    while frontier:
        frontier = {pid for pid, (ppid, _) in table.items() if ppid in frontier and pid not in found}
        found.update({pid: table[pid][1] for pid in frontier})
    return found


def kill_all(processes: dict[int, str]) -> None:
    """SIGKILL each process that still runs with the recorded start time."""
    table = _process_table()
    for pid, start in processes.items():
        if pid != os.getpid() and table.get(pid, (0, None))[1] == start:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def watch(driver: int, pipe_fd: int) -> None:
    """Record ``driver``'s descendants until ``pipe_fd`` reaches end of file, then kill them (and theirs)."""
    recorded: dict[int, str] = {}
    while True:
        recorded.update(descendants(driver))
        ready, _, _ = select.select([pipe_fd], [], [], POLL_SECONDS)
        if ready and not os.read(pipe_fd, 1024):
            break
    for _ in range(3):  # processes they start while dying are their descendants
        for pid in list(recorded):
            recorded.update(descendants(pid))
        kill_all(recorded)
        time.sleep(0.2)


def start_reaper() -> None:
    """Start the watchdog of this process's children, right after ``ray.init``: when this process started
    the Ray instance, gcs_server and raylet are its children; when it joined a cluster it has none (no-op)."""
    if not sys.platform.startswith("linux") or not descendants(os.getpid()):
        return
    read_end, write_end = os.pipe()
    subprocess.Popen(
        [sys.executable, "-m", "vse_ray.ray_reaper", str(os.getpid()), str(read_end)],
        pass_fds=(read_end,),
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(read_end)
    _OPEN_WHILE_ALIVE.append(write_end)  # never inherited, never closed: EOF means this process is gone


if __name__ == "__main__":
    watch(int(sys.argv[1]), int(sys.argv[2]))
