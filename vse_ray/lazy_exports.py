"""Package re-exports imported on first use (PEP 562), so that importing one light submodule (a config, a
check) does not import torch, Ray and MLflow: `vse-ray` reports a bad option before loading them."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, exports: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list]]:
    """``(__getattr__, __dir__)`` for ``package`` whose names live in ``exports`` ({name: module})."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(exports[name]), name)

    def __dir__() -> list[str]:
        return sorted(exports)

    return __getattr__, __dir__


def import_object(path: str) -> Any:
    """The object at ``"package.module:Name"`` (a registry entry named without importing its module)."""
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)
