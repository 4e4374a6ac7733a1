"""One line per finished epoch on the driver's console while a Ray Train run works (workers stay quiet)."""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

from mlflow import MlflowClient

from vse_ray.tracking.metric_keys import EPOCH_KEYS, VAL_RSUM

COLLAPSE_WARNING = (
    "warning: epoch {epoch}: the loss sits at its collapse value (2·B·margin: the hardest negative scores as "
    "the positive); warm up first, e.g. --warmup-epochs 2 (sum of hinges) or longer"
)


class RunEpochLines:
    """Context manager that prints `epoch e/E: val rsum …, train loss …, … s` for each epoch the run logs.

    Rank 0 logs every epoch to the MLflow run as it finishes; this polls that run from the driver (Ray's
    own worker output is kept off the console). Seconds are wall time since the previous line (the first
    line includes the workers' start-up). Epochs logged before it starts (a resumed run) are not repeated.
    """

    def __init__(
        self, run_id: str, tracking_uri: str, epochs: int, interval: float = 2.0, stream: TextIO | None = None
    ):
        self.client, self.run_id = MlflowClient(tracking_uri), run_id
        self.epochs, self.interval = epochs, interval
        self.stream = stream or sys.stdout
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="vse_ray-epoch-progress", daemon=True)
        self._seen: set[int] = set()
        self._last = time.time()

    def __enter__(self) -> RunEpochLines:
        self._seen = {m.step for m in self.client.get_metric_history(self.run_id, VAL_RSUM)}
        self._last = time.time()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.poll()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.poll()

    def poll(self) -> None:
        """Print the epochs logged since the last call."""
        rsum = {m.step: m for m in self.client.get_metric_history(self.run_id, VAL_RSUM)}
        new = sorted(set(rsum) - self._seen)
        if not new:
            return
        history = self.client.get_metric_history
        losses = {m.step: m.value for m in history(self.run_id, EPOCH_KEYS["train_loss"])}
        collapsed = {m.step for m in history(self.run_id, EPOCH_KEYS["collapsed"]) if m.value}
        for epoch in new:
            logged = rsum[epoch].timestamp / 1000
            seconds, self._last = max(logged - self._last, 0.0), max(logged, self._last)
            loss = f", train loss {losses[epoch]:.4f}" if epoch in losses else ""
            print(
                f"epoch {epoch}/{self.epochs}: val rsum {rsum[epoch].value:.1f}{loss}, {seconds:.1f} s",
                file=self.stream,
                flush=True,
            )
            if epoch in collapsed:
                print(COLLAPSE_WARNING.format(epoch=epoch), file=self.stream, flush=True)
            self._seen.add(epoch)
