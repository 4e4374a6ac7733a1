"""Compiled row kernels: ``numba.njit`` with on-disk caching, for the few loops numpy cannot vectorise well.

Kernels loop over rows (queries) and items in machine code; callers keep the torch/numpy interface. The
first call of a kernel in a fresh environment compiles it (about a second) and caches the result beside
the module (or in the user cache directory when the package folder is read-only).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, cast, overload

import numba

P = ParamSpec("P")
R = TypeVar("R")


@overload
def njit(function: Callable[P, R]) -> Callable[P, R]: ...
@overload
def njit(*, inline: str) -> Callable[[Callable[P, R]], Callable[P, R]]: ...
def njit(function: Callable[..., Any] | None = None, *, inline: str = "never") -> Any:
    """`function` compiled by numba (cached on disk, releasing the GIL; `inline`: numba's option), typed
    with its own signature: numba's stubs type the compiled dispatcher as taking one argument."""
    options: dict[str, Any] = {"cache": True, "nogil": True, "inline": inline}
    compile_ = numba.njit(**options)
    if function is None:
        return lambda f: cast("Callable[..., Any]", compile_(f))
    return cast("Callable[..., Any]", compile_(function))


__all__ = ["njit"]
