"""The code version logged with every run: package version plus the git commit when run from a checkout."""

from __future__ import annotations

import subprocess
from pathlib import Path

import vse_ray


def _git(root: Path, *args: str) -> str:
    result = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=5)
    return result.stdout.strip()


def code_version() -> str:
    """`<version>+<short sha>` inside a git checkout (`.dirty` with local changes), else `<version>`."""
    root = Path(vse_ray.__file__).resolve().parent.parent
    try:
        sha = _git(root, "rev-parse", "--short", "HEAD")
        dirty = _git(root, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return vse_ray.__version__
    if not sha:
        return vse_ray.__version__
    return f"{vse_ray.__version__}+{sha}{'.dirty' if dirty else ''}"
