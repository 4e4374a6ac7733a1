"""Fault injection into Ray Train workers, from the tests alone.

The session's Ray starts every worker process with `worker_setup(folder)` (a `worker_process_setup_hook`):
it wraps `RayTrainReporter.report`: a worker reads `<folder>/kill.json` before each report. Without that
file nothing changes. With `{"epoch": E, "marker": PATH}` in it, the first worker to report epoch E writes the
marker and dies (`os._exit`) instead, once: Ray Train then restarts it from the previous epoch's checkpoint.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

REQUEST = "kill.json"


def worker_setup(folder: str) -> Callable[[], None]:
    """The setup hook (a closure, pickled by value: workers need not import the tests)."""
    request = Path(folder) / REQUEST

    def install() -> None:
        import json
        import os
        from pathlib import Path

        from vse_ray.train import reporter

        report = reporter.RayTrainReporter.report

        def report_or_die(self, metrics, checkpoint_dir):  # type: ignore[no-untyped-def]
            if request.is_file():
                plan = json.loads(request.read_text())
                marker = Path(plan["marker"])
                if metrics["epoch"] == plan["epoch"] and not marker.exists():
                    marker.write_text(f"killed after training epoch {plan['epoch']}\n")
                    os._exit(1)
            report(self, metrics, checkpoint_dir)

        reporter.RayTrainReporter.report = report_or_die  # type: ignore[method-assign]

    return install


def request_kill(folder: Path, epoch: int, marker: Path) -> Path:
    """Ask the next worker that reports `epoch` to die once; returns the request file (delete it after)."""
    request = folder / REQUEST
    request.write_text(json.dumps({"epoch": epoch, "marker": str(marker)}))
    return request
