"""Folder names: the default output folder, and names that become folders (studies, sweeps, runs), which
stay one path component inside their parent folder."""

from __future__ import annotations

from typing import Any

DEFAULT_OUTPUT_DIR = "vse_ray_out"  # checkpoints, MLflow store, reports; studies and the demo use subfolders
FORBIDDEN = "/\\\0"


def check_plain_name(value: Any, where: str) -> str:
    """``value`` when it is letters, digits, '-' or '_' only; ValueError naming ``where`` otherwise."""
    if not isinstance(value, str) or not value.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"{where}: expected letters, digits, '-' or '_', got {value!r}")
    return value


def check_folder_name(value: Any, where: str) -> str:
    """``value`` when it is one path component (no '/', '\\', NUL, no leading '.'); ValueError otherwise.

    Spaces and quotes are allowed: such a name is a valid folder, and MLflow filters escape it.
    """
    bad = not isinstance(value, str) or not value.strip() or value.startswith(".")
    if bad or any(c in value for c in FORBIDDEN):
        raise ValueError(f"{where}: expected one folder name (no '/', '\\' or leading '.'), got {value!r}")
    return value
