"""SweepConfig: what a sweep searches, how trials are scheduled, and where results go."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vse_ray.folder_names import DEFAULT_OUTPUT_DIR, check_plain_name
from vse_ray.resources import resource_path

SCHEDULERS = ("asha", "fifo")
TRIAL_MODES = ("process", "ddp")  # a process per trial, or a TorchTrainer per trial


@dataclass
class SweepConfig:
    """One Ray Tune sweep over a ``tune_spaces/*.yaml`` space.

    Attributes:
        space: search-space YAML, a path or a shipped name (``ladder_auto``); a path once validated.
        data_dir: precompute output folder every trial trains on.
        train: other fixed ``TrainConfig`` fields (``epochs``, ``batch_size``, ``finetune``, ...).
        num_samples: trials drawn from the space (``grid`` leaves multiply it).
        scheduler: ``asha`` (early-stops weak trials at rungs grace_period·rf^k epochs) or ``fifo``.
        grace_period: epochs every trial runs before ASHA may stop it.
        reduction_factor: ASHA keeps the top 1/reduction_factor at each rung.
        max_concurrent: trials running at once (0: as many as resources allow).
        trial_mode: ``process`` (a process per trial, fractional GPUs) or ``ddp`` (a TorchTrainer per trial).
        cpus_per_trial / gpus_per_trial: resources of a ``process`` trial (fractions allowed).
        name: sweep name: Tune experiment folder and MLflow parent run (stable, so a rerun resumes it).
        resume: restore an interrupted sweep of the same name instead of refusing to overwrite it.
        stop_after_trials: end this run once that many trials have finished (the rest wait for a resume).
        seed: random seed of the search.
        output_dir / storage_path / tracking_uri / experiment: as in ``TrainConfig`` (same defaults).
    """

    space: str
    data_dir: str
    train: dict[str, Any] = field(default_factory=dict)
    num_samples: int = 8
    scheduler: str = "asha"
    grace_period: int = 1
    reduction_factor: int = 2
    max_concurrent: int = 0
    trial_mode: str = "process"
    cpus_per_trial: float = 1.0
    gpus_per_trial: float = 0.0
    name: str | None = None
    resume: bool = True
    stop_after_trials: int = 0
    seed: int = 0
    output_dir: str = DEFAULT_OUTPUT_DIR
    storage_path: str | None = None
    tracking_uri: str | None = None
    experiment: str | None = None

    def validate(self) -> SweepConfig:
        """Raise ValueError naming the first invalid field; return self."""
        self.space = str(resource_path("space", self.space))
        if not self.data_dir:
            raise ValueError("data_dir: required (a precompute output folder)")
        if self.name is not None:
            check_plain_name(self.name, "name")
        for name in ("num_samples", "grace_period", "reduction_factor"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: must be a positive integer, got {value!r}")
        if self.reduction_factor < 2:
            raise ValueError(f"reduction_factor: must be >= 2, got {self.reduction_factor}")
        for name in ("max_concurrent", "stop_after_trials"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 0:
                raise ValueError(f"{name}: must be an integer >= 0, got {getattr(self, name)!r}")
        if self.scheduler not in SCHEDULERS:
            raise ValueError(f"scheduler: must be one of {SCHEDULERS}, got {self.scheduler!r}")
        if self.trial_mode not in TRIAL_MODES:
            raise ValueError(f"trial_mode: must be one of {TRIAL_MODES}, got {self.trial_mode!r}")
        for name in ("cpus_per_trial", "gpus_per_trial"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{name}: must be a finite number >= 0, got {value!r}")
        if self.cpus_per_trial <= 0:
            raise ValueError(f"cpus_per_trial: must be > 0, got {self.cpus_per_trial}")
        clash = sorted({"data_dir", "loss", "storage_path", "tracking_uri", "experiment"} & set(self.train))
        if clash:
            raise ValueError(f"train: set {clash} through the SweepConfig fields (or the space), not train")
        return self

    def sweep_name(self) -> str:
        """The stable sweep name: ``name``, else ``<dataset>-<space file stem>``."""
        return self.name or f"{Path(self.data_dir).resolve().name}-{Path(self.space).stem}"
