"""``num_workers: 0``: a run trained in the command's own process, without Ray, its checkpoints kept.

Ray Train's own local mode (``ScalingConfig(num_workers=0)``) runs the training function in the driver but
keeps no checkpoint. Here the engine (:func:`~vse_ray.train.epoch_loop.run_training`, as in a Ray Train
worker) reports each epoch to :class:`FolderReporter`, which keeps its checkpoint in the run's folder the way
the Ray Train run keeps them (the latest epoch, and the best by validation rsum), prints the epoch's line and
hands the epoch to the driver's MLflow record. A rerun resumes from the latest checkpoint. No actor and no
Ray instance start: a short run on one machine saves their start-up (``docs/performance.md``). A worker that
dies is not restarted (``max_failures`` does not apply). Torch takes the threads Ray would give the worker
(``cpus_per_worker``) unless ``OMP_NUM_THREADS`` says otherwise.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vse_ray.checkpoint_files import CHECKPOINT_FILE, load_checkpoint
from vse_ray.train.config import CheckedConfig
from vse_ray.train.epoch_text import epoch_lines

PREFIX = "checkpoint_epoch="  # a kept epoch: <run folder>/checkpoint_epoch=0003/model.pt
PARTIAL = ".partial_"  # a checkpoint being copied in; a killed copy is removed by the next run


def kept_checkpoints(folder: Path) -> dict[int, Path]:
    """The epochs whose checkpoint an in-process run kept in ``folder``, by epoch."""
    kept = {}
    for path in folder.glob(f"{PREFIX}*"):
        epoch = path.name.removeprefix(PREFIX)
        if epoch.isdigit() and (path / CHECKPOINT_FILE).is_file():
            kept[int(epoch)] = path
    return kept


class FolderReporter:
    """Keeps each reported epoch's checkpoint in the run's folder (the latest and the best by ``rsum``),
    prints the epoch's console line, then calls ``on_epoch`` with its metrics."""

    def __init__(
        self,
        folder: Path,
        epochs: int,
        on_epoch: Callable[[dict[str, Any]], object],
        history: list[dict[str, Any]],
    ):
        """``history``: the resumed checkpoint's epochs (the rsum of each kept epoch is read there)."""
        self.folder, self.epochs, self.on_epoch = folder, epochs, on_epoch
        rsum = {int(m["epoch"]): float(m.get("rsum", float("-inf"))) for m in history}
        self.rsum = {epoch: rsum[epoch] for epoch in kept_checkpoints(folder)}
        self._last = time.time()

    def report(self, metrics: dict[str, Any], checkpoint_dir: str | None) -> None:
        """Keep the checkpoint (in-process runs are rank 0 only), print, hand the epoch on."""
        epoch = int(metrics["epoch"])
        if checkpoint_dir is not None:
            target = self.folder / f"{PREFIX}{epoch:04d}"
            partial = self.folder / f"{PARTIAL}{target.name}"
            shutil.copytree(checkpoint_dir, partial)
            if target.exists():  # an epoch trained again after a kill between its copy and the next epoch
                shutil.rmtree(target)
            partial.rename(target)
            self.rsum[epoch] = float(metrics.get("rsum", float("-inf")))
            self._prune(latest=epoch)
        now = time.time()
        seconds, self._last = now - self._last, now
        for line in epoch_lines(metrics, self.epochs, seconds):
            print(line, file=sys.stdout, flush=True)
        self.on_epoch(metrics)

    def best(self) -> int:
        """The kept epoch of the highest validation rsum (the earlier of equal ones)."""
        return max(sorted(self.rsum), key=lambda epoch: self.rsum[epoch])

    def _prune(self, latest: int) -> None:
        keep = {latest, self.best()}
        for epoch, path in kept_checkpoints(self.folder).items():
            if epoch not in keep:
                shutil.rmtree(path)
                self.rsum.pop(epoch, None)


def train_in_process(
    checked: CheckedConfig, folder: Path, on_epoch: Callable[[dict[str, Any]], object]
) -> tuple[dict[str, Any], Path, dict[str, Any]]:
    """Train (or resume) the run in this process, its checkpoints in ``folder``; ``on_epoch`` gets each
    epoch's metrics as it ends. Returns the latest checkpoint, the best checkpoint's folder and its
    metrics (as the Ray Train run's result gives them)."""
    import torch

    from vse_ray.train.epoch_loop import run_training

    if "OMP_NUM_THREADS" not in os.environ:  # the threads Ray gives a worker of `cpus_per_worker` CPUs
        torch.set_num_threads(max(1, int(checked.config.cpus_per_worker)))
    folder.mkdir(parents=True, exist_ok=True)
    for partial in folder.glob(f"{PARTIAL}{PREFIX}*"):  # a copy cut short by a kill or a full disk
        shutil.rmtree(partial)
    kept = kept_checkpoints(folder)
    start_state = load_checkpoint(kept[max(kept)]) if kept else None
    history = start_state["history"] if start_state else []
    reporter = FolderReporter(folder, checked.config.epochs, on_epoch, history)
    run_training(checked, reporter, start_state)
    kept = kept_checkpoints(folder)
    if not kept:
        raise RuntimeError(f"run {checked.config.run_name}: the training kept no checkpoint in {folder}")
    latest = load_checkpoint(kept[max(kept)])
    best = reporter.best()
    metrics = next(m for m in latest["history"] if int(m["epoch"]) == best)
    return latest, kept[best], dict(metrics)
