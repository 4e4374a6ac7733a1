"""A local Ray instance that vse_ray starts goes away with its driver, even when the driver is SIGKILLed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.ray

DRIVER = """
import time, ray
from vse_ray.ray_session import ensure_ray
ensure_ray("local", num_cpus=1, include_dashboard=False, object_store_memory=80 * 1024**2)
ray.get(ray.remote(lambda: 1).remote())  # a worker process too
print(ray._private.worker.global_worker.node.get_session_dir_path(), flush=True)
time.sleep(300)
"""


def _processes() -> dict[int, tuple[int, str, str]]:
    """{pid: (parent pid, state, command line)} of every process, from /proc."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        found[int(entry.name)] = (int(fields[1]), fields[0], cmdline)
    return found


def _session_processes(driver: int, session: str) -> set[int]:
    """The driver's descendants and every process naming the session folder on its command line."""
    procs = _processes()
    family, grew = {driver}, True
    while grew:
        kids = {pid for pid, (ppid, _, _) in procs.items() if ppid in family} - family
        family |= kids
        grew = bool(kids)
    named = {pid for pid, (_, _, cmd) in procs.items() if Path(session).name in cmd}
    return (family | named) - {driver}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigkilled_driver_leaves_no_ray_process(tmp_path):
    env = {**os.environ, "RAY_ADDRESS": "", "PYTHONPATH": str(Path(__file__).parents[2])}
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
    )
    try:
        session = driver.stdout.readline().strip()
        assert session, "the driver did not start Ray"
        started = _session_processes(driver.pid, session)
        assert len(started) >= 3  # gcs_server, raylet, agents, a worker
        driver.send_signal(signal.SIGKILL)
        driver.wait()
        deadline = time.monotonic() + 60  # a loaded machine takes longer to end the agents
        while time.monotonic() < deadline:
            alive = {pid for pid, (_, state, _) in _processes().items() if pid in started and state != "Z"}
            if not alive:
                break
            time.sleep(0.5)
        procs = _processes()
        assert not alive, [procs[pid][2][:80] for pid in alive if pid in procs]
    finally:
        if driver.poll() is None:
            driver.kill()
