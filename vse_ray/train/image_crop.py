"""open_clip's training augmentation of the stored images: a random resized crop, drawn per row of a batch.

open_clip's train transform (``open_clip.transform.image_transform(is_train=True)``, 3.3.0) is torchvision's
``RandomResizedCrop(image_size, scale=aug_cfg.scale, interpolation=BICUBIC)`` with ``scale`` (0.9, 1.0)
and torchvision's ``ratio`` (3/4, 4/3), then the normalisation. Here each row of a (B, H, W, 3) uint8 batch
gets its own crop, drawn by torchvision's ``RandomResizedCrop.get_params`` algorithm (the same draws, in the
same order, from `generator` instead of torch's global stream) and resized back to (H, W) with
torchvision's antialiased bicubic resize of uint8 tensors (``transforms.v2.functional.resized_crop``,
whose uint8 path follows PIL's, on which open_clip crops: within one level of 255). Equal, to the bit, to
``transforms.v2.RandomResizedCrop`` applied row by row after ``torch.manual_seed`` of the same seed
(tests). The model's preprocessing then normalises (and resizes, when the stored size is not the
tower's). Torch is imported on first use (the command line reads the constants).

The crop is cut from the stored image, which precompute has already fitted to the tower's input (shortest
side, centre square), where open_clip crops the original image; at scale ≥ 0.9 the two differ by the
strip the centre crop cut off.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch
    from torch import Tensor

RATIO = (3.0 / 4.0, 4.0 / 3.0)  # torchvision's default, which open_clip keeps
OPEN_CLIP_SCALE = (0.9, 1.0)  # open_clip's AugmentationCfg.scale


def crop_box(
    height: int,
    width: int,
    scale: tuple[float, float],
    ratio: tuple[float, float],
    generator: torch.Generator,
) -> tuple[int, int, int, int]:
    """(top, left, h, w) of a crop, drawn as torchvision's ``RandomResizedCrop.get_params`` draws it."""
    import torch

    area = height * width
    log_ratio = torch.log(torch.tensor(ratio))
    for _ in range(10):
        target_area = area * torch.empty(1).uniform_(scale[0], scale[1], generator=generator).item()
        aspect = torch.exp(
            torch.empty(1).uniform_(float(log_ratio[0]), float(log_ratio[1]), generator=generator)
        ).item()
        w = int(round(math.sqrt(target_area * aspect)))
        h = int(round(math.sqrt(target_area / aspect)))
        if 0 < w <= width and 0 < h <= height:
            top = int(torch.randint(0, height - h + 1, size=(1,), generator=generator).item())
            left = int(torch.randint(0, width - w + 1, size=(1,), generator=generator).item())
            return top, left, h, w
    in_ratio = width / height  # torchvision's fallback: the centre crop within the ratio range
    if in_ratio < min(ratio):
        w, h = width, int(round(width / min(ratio)))
    elif in_ratio > max(ratio):
        h, w = height, int(round(height * max(ratio)))
    else:
        w, h = width, height
    return (height - h) // 2, (width - w) // 2, h, w


def random_resized_crops(
    images: Tensor, scale: tuple[float, float], generator: torch.Generator, ratio: tuple[float, float] = RATIO
) -> Tensor:
    """(B, H, W, 3) uint8 → (B, H, W, 3) uint8: row k cropped by its own drawn box, resized back to (H, W)."""
    import torch
    from torchvision.transforms.v2 import InterpolationMode
    from torchvision.transforms.v2 import functional as F

    height, width = images.shape[1:3]
    rows = images.permute(0, 3, 1, 2)
    out = torch.empty_like(rows)
    for k in range(len(rows)):
        top, left, h, w = crop_box(height, width, scale, ratio, generator)
        out[k] = F.resized_crop(
            rows[k], top, left, h, w, [height, width], interpolation=InterpolationMode.BICUBIC, antialias=True
        )
    return out.permute(0, 2, 3, 1)
