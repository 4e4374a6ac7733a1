"""JSON files written whole or not at all: a reader (or a rerun after SIGKILL) never sees half a file."""

from __future__ import annotations

import json
import os
from pathlib import Path


def write_json_atomic(data: dict, path: Path) -> None:
    """Write ``data`` to a hidden ``.<name>.<pid>.tmp`` beside ``path``, then rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(tmp, path)
