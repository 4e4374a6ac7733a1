"""One line per finished epoch on the driver's console while a Ray Train run works, from Ray Train's reports.

Ray Train hands each report to callbacks in its controller actor, not to the driver: `ReportedEpochs` runs
there and sends rank 0's metrics to a Ray queue that `RunEpochLines` reads on the driver, which prints the
epoch and hands it on (`vse-ray train` logs it to MLflow there). Workers stay quiet.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

import ray
from ray.train import Checkpoint, UserCallback
from ray.util.queue import Queue
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from vse_ray.train.epoch_text import epoch_lines


class ReportedEpochs(UserCallback):  # pragma: no cover, runs in Ray Train's controller (integration tests)
    """Ray Train callback: after each report, its checkpoint recorded, rank 0's metrics go to ``queue``."""

    def __init__(self, queue: Queue):
        self.queue = queue

    def after_report(
        self, run_context: Any, metrics: list[dict[str, Any]], checkpoint: Checkpoint | None
    ) -> None:
        self.queue.put(metrics[0])  # rank 0's report holds every metric; the other ranks' the training keys


class RunEpochLines:
    """Context manager that prints `epoch e/E: val rsum …, train loss …, … s` for each epoch the run reports.

    Put :attr:`callback` on the run's ``RunConfig``; a thread prints what it sends, then calls ``on_epoch``
    with the epoch's metrics (in that thread, about a second after the report). Seconds are wall time
    since the previous line (the first line includes the workers' start-up). A resumed run's earlier epochs
    are not reported again, so they are not repeated. On exit the epochs still queued are printed and the
    queue's actor ends. An error of ``on_epoch`` (a full disk under MLflow's store) stops its calls and is
    kept in :attr:`error` for the driver to raise.
    """

    def __init__(
        self,
        epochs: int,
        interval: float = 1.0,
        stream: TextIO | None = None,
        on_epoch: Callable[[dict[str, Any]], object] | None = None,
    ):
        self.epochs, self.interval, self.on_epoch = epochs, interval, on_epoch
        self.stream = stream or sys.stdout
        # no CPU taken from the workers; on the driver's node, so that losing a worker's node (which Ray Train
        # survives, max_failures) does not take the queue, and the run, with it
        driver_node = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        self.queue = Queue(actor_options={"num_cpus": 0, "scheduling_strategy": driver_node})
        self.callback = ReportedEpochs(self.queue)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="vse_ray-epoch-progress", daemon=True)
        self._last = time.time()
        self.error: Exception | None = None  # the first error of ``on_epoch``, which is not called again

    def __enter__(self) -> RunEpochLines:
        self._last = time.time()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.poll()
        self.queue.shutdown(force=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.poll()

    def poll(self) -> None:
        """Print the epochs reported since the last call."""
        for metrics in self.queue.get_nowait_batch(self.queue.qsize()):
            self.show(metrics)

    def show(self, metrics: dict[str, Any]) -> None:
        """Print one reported epoch, then hand it to ``on_epoch``."""
        now = time.time()
        seconds, self._last = now - self._last, now
        for line in epoch_lines(metrics, self.epochs, seconds):
            print(line, file=self.stream, flush=True)
        if self.on_epoch is not None and self.error is None:
            try:
                self.on_epoch(metrics)
            except Exception as err:  # kept for the driver (`error`), not a thread's traceback on the console
                self.error = err
