"""Mixed precision of a training step: autocast of the forward and loss in bf16 or fp16, with fp16's
gradient scaling (``torch.amp.GradScaler``), as open_clip's ``--precision amp_bf16`` / ``amp``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


class Precision:
    """The autocast of `precision` ("fp32": none) on `device`, and the gradient scaler fp16 needs."""

    def __init__(self, precision: str, device: torch.device):
        self.dtype = DTYPES.get(precision)
        self.device_type = device.type
        self.scaler = torch.amp.GradScaler(device.type) if precision == "fp16" else None

    @contextmanager
    def autocast(self) -> Iterator[None]:
        """The forward and the loss in the run's precision."""
        if self.dtype is None:
            yield
            return
        with torch.autocast(self.device_type, dtype=self.dtype):
            yield

    def backward(self, objective: torch.Tensor) -> None:
        (objective if self.scaler is None else self.scaler.scale(objective)).backward()

    def unscale(self, optimizer: torch.optim.Optimizer) -> None:
        """The true gradients, before they are clipped."""
        if self.scaler is not None:
            self.scaler.unscale_(optimizer)

    def step(self, optimizer: torch.optim.Optimizer) -> None:
        """The update (fp16: skipped when a gradient overflowed, and the scale adapts)."""
        if self.scaler is None:
            optimizer.step()
            return
        self.scaler.step(optimizer)
        self.scaler.update()


FP32 = Precision("fp32", torch.device("cpu"))
