"""Loss registry: build any loss by name with checked hyper-parameters."""

from __future__ import annotations

import inspect
from typing import Any

from vse_ray.losses.base import BaseVSELoss
from vse_ray.losses.bcls import BCLSLoss
from vse_ray.losses.ladder import LadderLoss
from vse_ray.losses.ladder_auto import AdaptiveLadderLoss
from vse_ray.losses.lseh import LSEHLoss
from vse_ray.losses.sam import SAMLoss
from vse_ray.losses.vse0 import VSE0Loss
from vse_ray.losses.vsepp import VSEPPLoss

LOSSES: dict[str, type[BaseVSELoss]] = {
    "vse0": VSE0Loss,
    "vsepp": VSEPPLoss,
    "ladder": LadderLoss,
    "ladder_auto": AdaptiveLadderLoss,
    "sam": SAMLoss,
    "bcls": BCLSLoss,
    "lseh": LSEHLoss,
}
LOSS_NAMES: tuple[str, ...] = tuple(LOSSES)


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
