"""Interrupt a sweep run, as Ctrl-C would, once N trials have completed all their epochs."""

from __future__ import annotations

import json
import logging
import os
import signal
from pathlib import Path
from typing import Any

from ray.tune import Stopper

LIMIT_FILE = "vse_ray_trial_limit.json"
logger = logging.getLogger(__name__)


class TrialLimitStopper(Stopper):
    """Interrupts the sweep run after ``limit`` trials reported their last epoch in it.

    It never stops trials itself (``Stopper.stop_all`` would end the sweep for good). Instead it sends the
    driver SIGUSR1, the signal Tune handles like Ctrl-C: the run saves its state and returns, unfinished
    trials stay resumable with ``Tuner.restore``. It marks the limit file ``"reached"`` first, so that the
    driver tells this stop from a Ctrl-C (:meth:`reached`). ``Tuner.restore`` unpickles the stopper the
    sweep was created with, so each run reads its limit from ``<sweep folder>/vse_ray_trial_limit.json``
    (written by the sweep driver before every run; 0 = no limit) rather than from the pickle.

    Args:
        limit_file: the JSON file ``{"limit": n}``.
        epochs: a trial's planned number of epochs (its result with ``epoch == epochs`` is its last).
    """

    def __init__(self, limit_file: str | Path, epochs: int) -> None:
        self.limit_file = str(limit_file)
        self.epochs = epochs
        self._done: set[str] = set()
        self._limit: int | None = None

    @staticmethod
    def write_limit(limit_file: str | Path, limit: int) -> None:
        """Set the limit of the next run (0: run every remaining trial)."""
        Path(limit_file).parent.mkdir(parents=True, exist_ok=True)
        Path(limit_file).write_text(json.dumps({"limit": int(limit)}))

    def limit(self) -> int:
        """This run's limit, read once from the limit file (0 when the file is missing)."""
        if self._limit is None:
            path = Path(self.limit_file)
            self._limit = int(json.loads(path.read_text())["limit"]) if path.is_file() else 0
        return self._limit

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        if int(result.get("epoch", 0)) >= self.epochs and trial_id not in self._done:
            self._done.add(trial_id)
            if len(self._done) == self.limit():
                self._interrupt()
        return False

    @staticmethod
    def reached(limit_file: str | Path) -> bool:
        """Whether the last run stopped at its limit (not at a Ctrl-C)."""
        path = Path(limit_file)
        return path.is_file() and bool(json.loads(path.read_text()).get("reached", False))

    def stop_all(self) -> bool:
        return False

    def _interrupt(self) -> None:
        handler = signal.getsignal(signal.SIGUSR1)
        if not callable(handler):  # Tune installs its handler only in the main thread
            logger.warning("trial limit reached, but no SIGUSR1 handler is installed: the sweep continues")
            return
        logger.warning("trial limit %d reached: interrupting this sweep run (resume it later)", self.limit())
        Path(self.limit_file).write_text(json.dumps({"limit": self.limit(), "reached": True}))
        os.kill(os.getpid(), signal.SIGUSR1)
