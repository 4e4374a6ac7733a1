"""A Reporter for single-process runs of the epoch loop in tests: no Ray, checkpoints copied to a folder."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any


class LocalReporter:
    """Single-process runs and tests: keeps the metric history and copies each checkpoint to `directory`."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        self.history: list[dict[str, Any]] = []
        self.checkpoints: list[Path] = []

    def report(self, metrics: dict[str, Any], checkpoint_dir: str | None) -> None:
        self.history.append(dict(metrics))
        if checkpoint_dir is not None:
            target = self.directory / f"checkpoint_epoch_{int(metrics['epoch']):04d}"
            shutil.copytree(checkpoint_dir, target, dirs_exist_ok=True)
            self.checkpoints.append(target)
