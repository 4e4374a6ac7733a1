"""A CLIP checkpoint's image preprocessing, applied to stored uint8 pixels on the model's device.

Both libraries describe it in the checkpoint's own config: open_clip's ``preprocess_cfg`` (``size``,
``resize_mode``, ``interpolation``, ``mean``, ``std``) and a Hugging Face folder's
``preprocessor_config.json`` (``size`` as ``shortest_edge`` or ``height``/``width``, ``crop_size``,
``resample``, ``image_mean``, ``image_std``). Both resize the image (the shortest side to a length, or
both sides: "squash"), cut the centre crop, scale to [0, 1] and normalise with the mean and std.

An image already at the tower's input size is only scaled and normalised, exactly as the libraries do on it
(their resize and crop leave it as it is); precompute can store the images that way (``--resize`` to the
tower's image size, ``--resize-mode shortest``). Other sizes are resized here by torchvision's antialiased
resize of uint8 tensors, which follows PIL's resampling and rounding (the tests find the similarities
within 1e-5 of the library's, up- and downsampling), not promised bit-equal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

INTERPOLATIONS = ("bicubic", "bilinear")
PIL_RESAMPLE = {2: "bilinear", 3: "bicubic"}  # PIL's codes, as Hugging Face configs give them
RESIZE_MODES = ("shortest", "squash")


@dataclass(frozen=True)
class PixelSpec:
    """What the tower reads: `crop` (height, width) of the image resized by `resize_mode` to `resize`
    (the shortest side's length, or (height, width) for "squash"), normalised with `mean` and `std`."""

    crop: tuple[int, int]
    resize: tuple[int, int]
    resize_mode: str
    interpolation: str
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    where: str  # the config it came from, for messages

    def __post_init__(self) -> None:
        if self.resize_mode not in RESIZE_MODES:
            raise ValueError(f"{self.where}: resize mode {self.resize_mode!r} is not one of {RESIZE_MODES}")
        if self.interpolation not in INTERPOLATIONS:
            raise ValueError(f"{self.where}: interpolation {self.interpolation!r} not in {INTERPOLATIONS}")

    @classmethod
    def from_open_clip(cls, cfg: dict[str, Any], where: str) -> PixelSpec:
        """From an open_clip model's ``visual.preprocess_cfg``."""
        size = _pair(cfg["size"])
        return cls(
            crop=size,
            resize=size,
            resize_mode=str(cfg.get("resize_mode", "shortest")),
            interpolation=str(cfg.get("interpolation", "bicubic")),
            mean=_three(cfg["mean"]),
            std=_three(cfg["std"]),
            where=where,
        )

    @classmethod
    def from_hf(cls, cfg: dict[str, Any], where: str) -> PixelSpec:
        """From a Hugging Face ``preprocessor_config.json`` (CLIPImageProcessor, SiglipImageProcessor)."""
        size = cfg.get("size", {})
        if "shortest_edge" in size:
            mode, resize = "shortest", (int(size["shortest_edge"]),) * 2
        else:
            mode, resize = "squash", (int(size["height"]), int(size["width"]))
        crop = resize
        if cfg.get("do_center_crop", False):
            crop_size = cfg["crop_size"]
            crop = (int(crop_size["height"]), int(crop_size["width"]))
        resample = int(cfg.get("resample", 3))
        if resample not in PIL_RESAMPLE:
            raise ValueError(f"{where}: resample {resample} is not one of {sorted(PIL_RESAMPLE)}")
        scale = float(cfg.get("rescale_factor", 1 / 255))
        if (
            not cfg.get("do_rescale", True)
            or abs(scale * 255 - 1) > 1e-9
            or not cfg.get("do_normalize", True)
        ):
            raise ValueError(f"{where}: only rescaling by 1/255 followed by normalisation is supported")
        return cls(
            crop=crop,
            resize=resize,
            resize_mode=mode,
            interpolation=PIL_RESAMPLE[resample],
            mean=_three(cfg["image_mean"]),
            std=_three(cfg["image_std"]),
            where=where,
        )


def _pair(size: int | Sequence[int]) -> tuple[int, int]:
    if isinstance(size, int):
        return size, size
    height, width = size
    return int(height), int(width)


def _three(values: Sequence[float]) -> tuple[float, float, float]:
    a, b, c = (float(v) for v in values)
    return a, b, c


class PixelPreprocess(nn.Module):
    """(B, H, W, 3) uint8 → (B, 3, h, w) float: the checkpoint's resize, centre crop and normalisation."""

    mean: Tensor
    std: Tensor

    def __init__(self, spec: PixelSpec):
        super().__init__()
        self.spec = spec
        # per value of a channels-last row of the crop (the channels repeated across its width)
        self.register_buffer("mean", torch.tensor(spec.mean).repeat(spec.crop[1]), persistent=False)
        self.register_buffer("std", torch.tensor(spec.std).repeat(spec.crop[1]), persistent=False)

    def forward(self, images: Tensor) -> Tensor:
        from torchvision.transforms.v2 import InterpolationMode
        from torchvision.transforms.v2 import functional as F

        if images.dim() != 4 or images.shape[-1] != 3 or images.dtype != torch.uint8:
            raise ValueError(
                f"clip reads (B, H, W, 3) uint8 images, got {images.dtype} of shape {tuple(images.shape)}"
            )
        x = images.permute(0, 3, 1, 2)
        spec, (height, width) = self.spec, x.shape[-2:]
        if spec.resize_mode == "squash":
            size = list(spec.resize)
        else:  # the shortest side to its length, the other in proportion (rounded down, as both libraries)
            short = spec.resize[0]
            size = (
                [short, int(short * width / height)]
                if height <= width
                else [int(short * height / width), short]
            )
        if tuple(size) != (height, width):
            mode = (
                InterpolationMode.BICUBIC if spec.interpolation == "bicubic" else InterpolationMode.BILINEAR
            )
            x = F.resize(x, size, interpolation=mode, antialias=True)
        if tuple(x.shape[-2:]) != spec.crop:
            x = F.center_crop(x, list(spec.crop))
        # scaled and normalised channels-last, in place, a row of the crop at a time (a quarter of the time
        # of broadcasting 3 channel values, which is a third of that of the channels-first view)
        batch, channels, height, width = x.shape
        rows = x.permute(0, 2, 3, 1).reshape(batch * height, width * channels)
        pixels = rows.float().div_(255.0).sub_(self.mean).div_(self.std)
        return pixels.view(batch, height, width, channels).permute(0, 3, 1, 2)
