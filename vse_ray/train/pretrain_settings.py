"""The settings of a CLIP pretraining on the alt-text pool (:mod:`vse_ray.train.clip_pretrain`): its cache
key. Light to import: the command line reads the defaults."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from vse_ray.train.image_crop import OPEN_CLIP_SCALE


@dataclass(frozen=True)
class PretrainSettings:
    """Everything the checkpoint depends on (its cache key). `exclude_seed` / `exclude_images`: the
    embedded dataset whose scenes the pool leaves out (:mod:`vse_ray.data.synthetic.pool`)."""

    arch: str = "clip-small.json"
    pool_images: int = 16000
    pool_seed: int = 1
    pool_captions: int = 3
    exclude_seed: int = 0
    exclude_images: int = 10000
    epochs: int = 2
    batch_size: int = 128
    lr: float = 5e-4
    weight_decay: float = 0.1
    warmup_steps: int = 100
    crop_scale: tuple[float, float] = OPEN_CLIP_SCALE
    seed: int = 0

    def check(self) -> None:
        """ValueError, one line naming the setting, for a value that cannot run."""
        for name in ("pool_images", "pool_captions", "epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}: must be >= 1, got {getattr(self, name)}")
        if self.batch_size > self.pool_images:
            raise ValueError(f"batch_size {self.batch_size} exceeds the pool's {self.pool_images} images")
        low, high = self.crop_scale
        if not 0 < low <= high <= 1:
            raise ValueError(f"crop_scale: expected 0 < low <= high <= 1, got {self.crop_scale}")
        if self.lr <= 0 or self.weight_decay < 0 or self.warmup_steps < 0:
            raise ValueError("lr must be > 0, weight_decay and warmup_steps >= 0")

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "crop_scale": list(self.crop_scale)}

    def key(self) -> str:
        """A hash of the settings (the checkpoint's cache key)."""
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:16]
