"""Loss registry: build any loss by name with checked hyper-parameters."""

from __future__ import annotations

import inspect
from typing import Any

from vse_ray.lazy_exports import import_object
from vse_ray.losses.base import BaseVSELoss
from vse_ray.losses.names import LOSS_CLASSES, LOSS_NAMES

LOSSES: dict[str, type[BaseVSELoss]] = {name: import_object(path) for name, path in LOSS_CLASSES.items()}


def loss_hparams(name: str) -> dict[str, Any]:
    """Hyper-parameter names of loss ``name`` with their defaults."""
    if name not in LOSSES:
        raise ValueError(f"unknown loss name {name!r}; expected one of {LOSS_NAMES}")
    params = inspect.signature(LOSSES[name].__init__).parameters
    return {key: p.default for key, p in params.items() if key != "self"}


def make_loss(name: str, **hparams: Any) -> BaseVSELoss:
    """Build the loss ``name`` (one of LOSS_NAMES) with ``hparams``; unknown name or key -> ValueError."""
    known = loss_hparams(name)
    unknown = sorted(set(hparams) - set(known))
    if unknown:
        raise ValueError(f"unknown hyper-parameter(s) {unknown} for loss {name!r}; known: {sorted(known)}")
    return LOSSES[name](**hparams)
