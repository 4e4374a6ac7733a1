"""Reading a ``torch.save`` file of released code without arbitrary unpickling.

``torch.load(weights_only=True)`` rebuilds tensors and plain Python values only; the released training
scripts also store their ``argparse.Namespace`` of options, the one further type allowed here.
"""

from __future__ import annotations

import argparse
import pickle
import re
import zipfile
from pathlib import Path
from typing import Any

import torch

ALLOWED_TYPES = (argparse.Namespace,)


def load_torch_file(path: str | Path) -> Any:
    """The object in `path`, loaded with ``weights_only=True`` and :data:`ALLOWED_TYPES`.

    Raises:
        FileNotFoundError: nothing at `path`.
        ValueError: one line naming the file: a type outside the allow-list, or a truncated/foreign file.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint {path}: no such file")
    problem = _not_torch_file(path)
    if problem:
        raise ValueError(f"checkpoint {path}: expected a torch.save file, found {problem}")
    try:
        with torch.serialization.safe_globals(list(ALLOWED_TYPES)):
            return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        found = re.search(r"GLOBAL ([\w.]+)", str(err))
        what = f"the type {found.group(1)}" if found else "an object"
        allowed = ", ".join(f"{t.__module__}.{t.__qualname__}" for t in ALLOWED_TYPES)
        raise ValueError(
            f"checkpoint {path}: holds {what}, outside what a checkpoint of released code may hold "
            f"(tensors, plain values, {allowed}); not loaded"
        ) from None
    except Exception as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(
            f"checkpoint {path}: expected a torch.save file, found an unreadable one (truncated?): {first}"
        ) from err


def _not_torch_file(path: Path) -> str | None:
    """What `path` is instead of a torch.save file, or None when it starts as one: a zip archive (the
    format since PyTorch 1.6) or a pickle (the legacy format)."""
    with path.open("rb") as f:
        head = f.read(4)
    if head.startswith(b"PK\x03\x04"):
        return None if zipfile.is_zipfile(path) else "a truncated zip archive (no central directory)"
    if head[:1] == b"\x80":  # pickle protocol 2+ opcode, the legacy format's first byte
        return None
    return f"a file that starts with {head!r}"
