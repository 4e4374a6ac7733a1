"""Training checkpoints: one `model.pt` per checkpoint directory, read back with `weights_only=True`."""

from __future__ import annotations

import os
import pickle
import re
import shutil
import warnings
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

CHECKPOINT_FILE = "model.pt"
CHECKPOINT_FORMAT = "vse_ray.checkpoint/1"
# The legacy torch.save format pickles this number first (pickle's LONG1 opcode, 10 bytes, little-endian).
LEGACY_MAGIC = b"\x8a\x0a" + (0x1950A86A20F9469CFC6C).to_bytes(10, "little")
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


def load_torch_file(
    path: str | Path,
    allowed_types: Sequence[Any] = (),
    holder: str = "a vse_ray checkpoint",
    map_location: str | torch.device = "cpu",
    name: str | None = None,
) -> Any:
    """The object in a ``torch.save`` file, loaded with ``weights_only=True`` (tensors and plain values) and
    ``allowed_types``; nothing in the file runs.

    Args:
        path: The file.
        allowed_types: Further types the file may hold (released code stores an ``argparse.Namespace``), or
            ``(type, "module.name")`` for a type pickled under another name.
        holder: What the file is, for the refusal message ("a checkpoint of released code").
        map_location: Where tensors go.
        name: How messages name the file (default ``checkpoint <path>``), e.g. a run's artifact when
            ``path`` is a download folder.

    Raises:
        FileNotFoundError: nothing at `path`.
        ValueError: one line naming the file: a type outside the allow-list (named), or a truncated or
            foreign file.
    """
    path = Path(path)
    name = name or f"checkpoint {path}"
    if not path.is_file():
        raise FileNotFoundError(f"{name}: no such file")
    problem = not_torch_file(path)
    if problem:
        raise ValueError(f"{name}: expected a torch.save file, found {problem}")
    try:
        with torch.serialization.safe_globals(list(allowed_types)), warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Detected pickle protocol")  # a guess; the error says more
            return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as err:
        refused = refused_type(err, name, holder, allowed_types)
        if refused is not None:  # torch's advice to drop weights_only stays out
            raise refused from None
        first = str(err).strip().split("\n")[0].split(". ")[0] if str(err).strip() else type(err).__name__
        raise ValueError(
            f"{name}: expected a torch.save file, found an unreadable one (truncated?): {first}"
        ) from err


def refused_type(
    err: BaseException, name: str, holder: str, allowed_types: Sequence[Any] = ()
) -> ValueError | None:
    """The one-line refusal of a ``weights_only`` load that met a type outside the allow-list (torch names
    it ``GLOBAL module.name``), naming the type rather than repeating torch's advice to drop
    ``weights_only``; None for another error."""
    found = re.search(r"GLOBAL ([\w.]+)", str(err))
    if not (isinstance(err, pickle.UnpicklingError) and found):
        return None
    named = (t[1] if isinstance(t, tuple) else f"{t.__module__}.{t.__qualname__}" for t in allowed_types)
    allowed = "".join(f", {n}" for n in dict.fromkeys(named))
    return ValueError(
        f"{name}: holds the type {found.group(1)}, outside what {holder} may hold (tensors, plain "
        f"values{allowed}); not loaded"
    )


def not_torch_file(path: Path) -> str | None:
    """What `path` is instead of a torch.save file, or None when it starts as one: a zip archive (the
    format since PyTorch 1.6) or a pickle (the legacy format)."""
    with path.open("rb") as f:
        head = f.read(32)
    if head.startswith(b"PK\x03\x04"):
        return None if zipfile.is_zipfile(path) else "a truncated zip archive (no central directory)"
    if head[:1] == b"\x80":  # pickle protocol 2+ opcode, the legacy format's first byte
        return None if LEGACY_MAGIC in head else "a pickle file that torch.save did not write (pickle.dump?)"
    return f"a file that starts with {head[:4]!r}"


def load_checkpoint(
    path: str | Path, map_location: str | torch.device = "cpu", name: str | None = None
) -> dict[str, Any]:
    """Load a checkpoint file (or the `model.pt` inside a directory); ``name`` names it in messages
    (default ``checkpoint <path>``).

    Raises:
        FileNotFoundError: nothing at `path`.
        ValueError: the file is truncated/corrupt, holds a type a checkpoint may not (named; not loaded), or
            is not a vse_ray checkpoint (foreign format).
    """
    path = Path(path)
    if path.is_dir():
        path = path / CHECKPOINT_FILE
    name = name or f"checkpoint {path}"
    state = load_torch_file(path, map_location=map_location, name=name)
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        found = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise ValueError(f"{name}: not a {CHECKPOINT_FORMAT} checkpoint (format: {found!r})")
    missing = [k for k in REQUIRED_KEYS if k not in state]
    if missing:
        raise ValueError(f"{name}: missing keys {missing}")
    return state


def remove_partial_checkpoints(run_folder: Path) -> list[Path]:
    """Remove the ``checkpoint_*`` folders of a run folder whose ``model.pt`` is missing, empty or cut short
    (a full disk during Ray Train's copy); returns the files they held (sorted), for the error to name."""
    removed = []
    for folder in sorted(run_folder.glob("checkpoint_*")):
        path = folder / CHECKPOINT_FILE
        if folder.is_dir() and (not path.is_file() or not path.stat().st_size or not_torch_file(path)):
            shutil.rmtree(folder)
            removed.append(path)
    return removed
