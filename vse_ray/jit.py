"""Compiled row kernels: ``numba.njit`` with on-disk caching, for the few loops numpy cannot vectorise well.

Kernels loop over rows (queries) and items in machine code; callers keep the torch/numpy interface. The
first call of a kernel in a fresh environment compiles it (about a second) and caches the result beside
the module (or in the user cache directory when the package folder is read-only).
"""

from __future__ import annotations

from functools import partial

import numba

njit = partial(numba.njit, cache=True, nogil=True)

__all__ = ["njit"]
