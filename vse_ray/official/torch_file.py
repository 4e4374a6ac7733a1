"""Reading a ``torch.save`` file of released code without arbitrary unpickling.

``torch.load(weights_only=True)`` rebuilds tensors and plain Python values only; the released training
scripts also store their ``argparse.Namespace`` of options, the one further type allowed here.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from vse_ray.tracking.checkpoint import load_torch_file as load_safely

ALLOWED_TYPES = (argparse.Namespace,)


def load_torch_file(path: str | Path) -> Any:
    """The object in `path`, loaded with ``weights_only=True`` and :data:`ALLOWED_TYPES`.

    Raises:
        FileNotFoundError: nothing at `path`.
        ValueError: one line naming the file: a type outside the allow-list, or a truncated/foreign file.
    """
    return load_safely(path, ALLOWED_TYPES, "a checkpoint of released code")
