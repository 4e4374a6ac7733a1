"""SweepConfig: what a sweep searches, how trials are scheduled, and where results go."""

from __future__ import annotations

import math
from dataclasses import MISSING, dataclass
from pathlib import Path
from typing import Any

from vse_ray.config_fields import described
from vse_ray.folder_names import DEFAULT_OUTPUT_DIR, check_plain_name
from vse_ray.resources import resource_path

SCHEDULERS = ("asha", "fifo")
TRIAL_MODES = ("process", "ddp")  # a process per trial, or a TorchTrainer per trial


@dataclass
class SweepConfig:
    """One Ray Tune sweep over a ``tune_spaces/*.yaml`` space; each field's help is in its metadata
    (`help_of`), which `vse-ray sweep` shows. ``output_dir``, ``storage_path``, ``tracking_uri`` and
    ``experiment`` are as in ``TrainConfig`` (same defaults)."""

    space: str = described(MISSING, "Search space: a shipped name (ladder_auto) or a YAML path.")
    data_dir: str = described(MISSING, "Precompute output folder every trial trains on.")
    train: dict[str, Any] = described(
        {}, "Other fixed TrainConfig fields (epochs, batch_size, finetune, ...)."
    )
    num_samples: int = described(8, "Trials drawn from the space (grid leaves multiply it).")
    scheduler: str = described(
        "asha", "'asha' (early-stops weak trials at rungs grace_period * rf^k epochs) or 'fifo'."
    )
    grace_period: int = described(1, "Epochs every trial runs before ASHA may stop it.")
    reduction_factor: int = described(2, "ASHA keeps the top 1/N of the trials at each rung.")
    max_concurrent: int = described(0, "Trials running at once (0: as many as resources allow).")
    trial_mode: str = described(
        "process", "'process': one process per trial (fractional GPUs); 'ddp': a TorchTrainer per trial."
    )
    cpus_per_trial: float = described(1.0, "CPUs of a 'process' trial (fractions allowed).")
    gpus_per_trial: float = described(0.0, "GPUs of a 'process' trial (0.25: 4 per GPU).")
    name: str | None = described(
        None, "Sweep name: Tune experiment folder and MLflow parent run; reuse it to resume."
    )
    resume: bool = described(
        True, "Resume an interrupted sweep of the same name (else refuse to overwrite it)."
    )
    stop_after_trials: int = described(
        0, "End this run after N finished trials; rerun to resume (0: no limit)."
    )
    seed: int = described(0, "Random seed of the search.")
    output_dir: str = described(DEFAULT_OUTPUT_DIR, "Output folder.")
    storage_path: str | None = described(None, "Shared storage for trials.")
    tracking_uri: str | None = described(None, "MLflow store URI.")
    experiment: str | None = described(None, "MLflow experiment (default: dataset).")

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
