"""Fault injection into Ray Train workers, from the tests alone.

The session's Ray starts every worker process with `worker_setup(folder)` (a `worker_process_setup_hook`):
it wraps `RayTrainReporter.report`: a worker reads `<folder>/kill.json` before each report. Without that
file nothing changes. With `{"epoch": E, "marker": PATH}` in it, the first worker to report epoch E writes the
marker and dies (`os._exit`) instead, once: Ray Train then restarts it from the previous epoch's checkpoint.

It also wraps `pyarrow.fs.copy_files`, through which Ray Train and Tune copy a reported checkpoint into the
run's storage, and `pyarrow.parquet.write_table`: while `<folder>/disk_full.json` (`{"marker": PATH, "write":
"checkpoint" or "store"}`) exists, each copy of a checkpoint (or each Parquet file written) writes part of its
file and fails as on a full disk (ENOSPC); the first one writes the marker.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

REQUEST = "kill.json"
DISK_FULL = "disk_full.json"


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

        import errno

        import pyarrow.fs
        import pyarrow.parquet

        def fills_the_disk(write: str, where: object) -> bool:
            request = Path(folder) / DISK_FULL
            plan = json.loads(request.read_text()) if request.is_file() else {}
            if plan.get("write") != write:
                return False
            marker = Path(plan["marker"])
            if not marker.exists():
                marker.write_text(f"disk full at {where}\n")
            return True

        def full() -> OSError:
            return OSError(errno.ENOSPC, "Error writing bytes to file. Detail: No space left on device")

        copy_files, write_table = pyarrow.fs.copy_files, pyarrow.parquet.write_table

        def copy_or_fill_the_disk(source, destination, *args, **kwargs):  # type: ignore[no-untyped-def]
            if "checkpoint_" in str(destination) and fills_the_disk("checkpoint", destination):
                for path in Path(source).iterdir():  # half of each file, then the disk is full
                    Path(destination).mkdir(parents=True, exist_ok=True)
                    (Path(destination) / path.name).write_bytes(path.read_bytes()[: path.stat().st_size // 2])
                raise full()
            return copy_files(source, destination, *args, **kwargs)

        def write_or_fill_the_disk(table, where, *args, **kwargs):  # type: ignore[no-untyped-def]
            if fills_the_disk("store", where):
                Path(where).write_bytes(b"PAR1")  # the file's first bytes, then the disk is full
                raise full()
            return write_table(table, where, *args, **kwargs)

        pyarrow.fs.copy_files = copy_or_fill_the_disk
        pyarrow.parquet.write_table = write_or_fill_the_disk

    return install


def request_kill(folder: Path, epoch: int, marker: Path) -> Path:
    """Ask the next worker that reports `epoch` to die once; returns the request file (delete it after)."""
    request = folder / REQUEST
    request.write_text(json.dumps({"epoch": epoch, "marker": str(marker)}))
    return request


def request_disk_full(folder: Path, marker: Path, write: str = "checkpoint") -> Path:
    """Fill the disk at each ``write`` from now on (``checkpoint``: a checkpoint's copy into the run's
    storage; ``store``: a Parquet file of the data store); returns the request file (delete it to free
    space)."""
    request = folder / DISK_FULL
    request.write_text(json.dumps({"marker": str(marker), "write": write}))
    return request
