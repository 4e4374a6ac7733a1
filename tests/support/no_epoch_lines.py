"""A stand-in for `RunEpochLines` where a test replaces Ray Train's trainer: no Ray queue is created (creating
one would start Ray), and nothing is reported."""

from __future__ import annotations

from contextlib import nullcontext

from ray.train import UserCallback


class NoEpochLines(nullcontext):
    """What `vse_ray.train.trainer.fit` uses of `RunEpochLines`: a callback doing nothing, and a context."""

    def __init__(self, epochs: int, **options: object):
        super().__init__()
        self.callback = UserCallback()
