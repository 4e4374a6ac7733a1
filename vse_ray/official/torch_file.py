"""Reading a ``torch.save`` file of released code without arbitrary unpickling.

``torch.load(weights_only=True)`` rebuilds tensors and plain Python values only; the released training
scripts also store their ``argparse.Namespace`` of options, and the ladder code its validation score, a NumPy
float: those are the further types allowed here (NumPy scalars under NumPy 1's module name too).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
from numpy._core.multiarray import scalar  # how NumPy pickles a scalar

from vse_ray.checkpoint_files import load_torch_file as load_safely

ALLOWED_TYPES = (
    argparse.Namespace,
    np.dtype,
    np.dtypes.Float64DType,  # the dtype of a NumPy float
    scalar,
    (scalar, "numpy.core.multiarray.scalar"),
)


def load_torch_file(path: str | Path) -> Any:
    """The object in `path`, loaded with ``weights_only=True`` and :data:`ALLOWED_TYPES`.

    Raises:
        FileNotFoundError: nothing at `path`.
        ValueError: one line naming the file: a type outside the allow-list, or a truncated/foreign file.
    """
    return load_safely(path, ALLOWED_TYPES, "a checkpoint of released code")
