"""Pixels → normalised CNN input crops: one centre crop or the 10 crops of VSE++ Sec. 3.1 (1C / 10C)."""

from __future__ import annotations

import numpy as np
import torch
from torchvision.transforms.v2 import functional as F

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def crop_batch(pixels: np.ndarray, crop: int | None = None, ten_crop: bool = False) -> torch.Tensor:
    """Cut the CNN input crops of a batch of equally sized RGB images and normalise them (ImageNet stats).

    Args:
        pixels: (n, H, W, 3) uint8 images (already resized, e.g. to 256x256).
        crop: Side of the square crops (e.g. 224); None uses the whole image.
        ten_crop: The 4 corner crops, the centre crop and their horizontal flips (VSE++ "10C");
            otherwise the centre crop only ("1C").

    Returns:
        (n, n_crops, 3, c, c) float32 tensor, n_crops = 10 or 1.
    """
    if pixels.ndim != 4 or pixels.shape[-1] != 3:
        raise ValueError(f"pixels must have shape (n, H, W, 3), got {pixels.shape}")
    side = min(pixels.shape[1:3])
    if crop is not None and not 1 <= crop <= side:
        raise ValueError(f"crop must be in 1..{side} (the image side), got {crop}")
    images = torch.from_numpy(np.ascontiguousarray(pixels)).permute(0, 3, 1, 2).float().div_(255.0)
    images = F.normalize(images, IMAGENET_MEAN, IMAGENET_STD)
    size = crop if crop is not None else side
    if ten_crop:
        return torch.stack(F.ten_crop(images, [size, size]), dim=1)
    return F.center_crop(images, [size, size]).unsqueeze(1)
