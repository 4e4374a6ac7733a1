"""Which implementation a row kernel runs: compiled loops on the host, or torch on the tensors' device.

Every row kernel of the losses (adaptive levels, hard-contrastive picks, sliding windows, the BCLS
forward/backward) has two implementations that agree within a stated tolerance: compiled numba loops,
fastest for CPU tensors, and plain torch operations, which stay on the tensors' device (no host copy,
no synchronisation on a GPU). ``"auto"`` picks the compiled loops for CPU tensors and torch otherwise;
``row_kernel_backend("torch")`` runs the torch path on CPU tensors as well (tests, comparisons).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from torch import Tensor

BACKENDS = ("auto", "compiled", "torch")
_BACKEND: ContextVar[str] = ContextVar("row_kernel_backend", default="auto")


def use_compiled(tensor: Tensor) -> bool:
    """Whether a row kernel on ``tensor`` runs the compiled host loops (else the torch operations)."""
    backend = _BACKEND.get()
    return backend == "compiled" or (backend == "auto" and tensor.device.type == "cpu")


@contextmanager
def row_kernel_backend(name: str) -> Iterator[None]:
    """Run row kernels with backend ``name`` ("auto", "compiled" or "torch") inside the block."""
    if name not in BACKENDS:
        raise ValueError(f"row kernel backend must be one of {BACKENDS}, got {name!r}")
    token = _BACKEND.set(name)
    try:
        yield
    finally:
        _BACKEND.reset(token)
