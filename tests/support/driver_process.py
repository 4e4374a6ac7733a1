"""`vse-ray ARGS` as a driver process of the tests' shared Ray instance, stopped with a signal at a chosen
line of its console."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import ray

ROOT = Path(__file__).resolve().parents[2]


class Driver:
    """``vse-ray ARGS`` in its own process, joined to this process's Ray instance (no Ray start-up); its
    console (stdout and stderr) is read line by line as it comes."""

    def __init__(self, args: list[str], cwd: Path, joins_ray: bool = True):
        """``joins_ray`` False: a command that starts no Ray (``train --num-workers 0``)."""
        env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
        env["PYTHONPATH"] = str(ROOT)
        if joins_ray:
            env["RAY_ADDRESS"] = ray.get_runtime_context().gcs_address
        self.process = subprocess.Popen(
            [sys.executable, "-m", "vse_ray.cli.main", *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self._new: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))
            self._new.put(line)
        self._new.put(None)

    def wait_for(self, fragment: str, timeout_s: float = 240) -> None:
        """Return once a console line contains ``fragment``; fail with the console when the process ends
        first or time runs out."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                line = self._new.get(timeout=1)
            except queue.Empty:
                continue
            if line is None:
                break
            if fragment in line:
                return
        self.process.kill()
        self.process.wait()
        raise AssertionError(f"no line with {fragment!r} (rc {self.process.returncode}):\n{self.console()}")

    def stop(self, sig: signal.Signals, timeout_s: float = 120) -> tuple[int, str]:
        """Send ``sig``; the exit code and the whole console once the process has ended."""
        self.process.send_signal(sig)
        code = self.process.wait(timeout=timeout_s)
        self._reader.join(timeout=10)
        return code, self.console()

    def console(self) -> str:
        return "\n".join(self.lines)
