"""Validation every N steps inside an epoch, keeping the best point (the reference code's selection: the
ladder code validates every 512 iterations, LSEH every 500 or 1,000 mini-batches, each keeping its best
snapshot)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn


class StepValidation:
    """Validates after every `every` steps of an epoch (0: never) and keeps the best point by rsum.

    Args:
        every: Steps between validations inside an epoch.
        validate: Returns the validation metrics of the model as it is (it may switch the model to eval
            mode; training switches it back).
    """

    def __init__(self, every: int, validate: Callable[[], dict[str, Any]]):
        self.every, self.validate = every, validate
        self.metrics: dict[str, Any] | None = None
        self.weights: dict[str, torch.Tensor] | None = None
        self.step = 0

    def after_step(self, step: int, model: nn.Module) -> None:
        """Validate at every multiple of `every` and keep the metrics and weights of the best point."""
        if not self.every or step % self.every:
            return
        metrics = self.validate()
        model.train()
        if self.metrics is None or metrics["rsum"] > self.metrics["rsum"]:
            self.metrics, self.step = metrics, step
            self.weights = {k: v.detach().clone() for k, v in model.state_dict().items()}

    def select(self, end_metrics: dict[str, Any]) -> tuple[dict[str, Any], dict[str, torch.Tensor] | None]:
        """The epoch's selected point: the end-of-epoch validation unless a step inside the epoch scored a
        higher rsum; returns its metrics (with `val_step`, 0 for the epoch's end) and its weights (None for
        the end of the epoch), and forgets the epoch's points."""
        best, weights, step = end_metrics, None, 0
        if self.metrics is not None and self.metrics["rsum"] > end_metrics["rsum"]:
            best, weights, step = self.metrics, self.weights, self.step
        self.metrics, self.weights, self.step = None, None, 0
        return {**best, "val_step": step}, weights
