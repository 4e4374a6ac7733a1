"""Training checkpoints: one `model.pt` per checkpoint directory, read back with `weights_only=True`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

CHECKPOINT_FILE = "model.pt"
CHECKPOINT_FORMAT = "vse_ray.checkpoint/1"
REQUIRED_KEYS = ("epoch", "model", "optimizer", "scheduler", "config", "history", "model_name", "model_args")


def save_checkpoint(directory: str | Path, state: dict[str, Any]) -> Path:
    """Write `state` (tensors, state dicts and plain Python values) atomically to `<directory>/model.pt`."""
    missing = [k for k in REQUIRED_KEYS if k not in state]
    if missing:
        raise ValueError(f"state: missing checkpoint keys {missing}")
    path = Path(directory) / CHECKPOINT_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save({"format": CHECKPOINT_FORMAT, **state}, tmp)
    os.replace(tmp, path)
    return path


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Load a checkpoint file (or the `model.pt` inside a directory).

    Raises:
        FileNotFoundError: nothing at `path`.
        ValueError: the file is truncated/corrupt, or not a vse_ray checkpoint (foreign format).
    """
    path = Path(path)
    if path.is_dir():
        path = path / CHECKPOINT_FILE
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint {path}: no such file")
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as err:
        raise ValueError(f"checkpoint {path}: unreadable (truncated or corrupt?): {err}") from err
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        found = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise ValueError(f"checkpoint {path}: not a {CHECKPOINT_FORMAT} checkpoint (format: {found!r})")
    missing = [k for k in REQUIRED_KEYS if k not in state]
    if missing:
        raise ValueError(f"checkpoint {path}: missing keys {missing}")
    return state
