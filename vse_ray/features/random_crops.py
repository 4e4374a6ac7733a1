"""Random resized crops and horizontal flips of a whole batch at once (VSE++'s "RC" training transform:
torchvision's RandomResizedCrop(224) and RandomHorizontalFlip, drawn per image and per step).

Crop boxes follow RandomResizedCrop's law: up to 10 tries of an area fraction uniform in [0.08, 1] and a
log-uniform aspect ratio in [3/4, 4/3], the first box that fits the image kept at a uniform position, else
the whole image (its centre crop at the clamped ratio). The boxes are resampled bilinearly to the output size
by `roi_align`, one call for the batch.
"""

from __future__ import annotations

import math

import torch

SCALE = (0.08, 1.0)
RATIO = (3 / 4, 4 / 3)
TRIES = 10


def crop_boxes(n: int, height: int, width: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """(n, 4) float boxes (x1, y1, x2, y2) in pixels, drawn as RandomResizedCrop draws them."""
    area = height * width
    target = area * torch.empty(n, TRIES).uniform_(*SCALE, generator=generator)
    log_ratio = torch.empty(n, TRIES).uniform_(math.log(RATIO[0]), math.log(RATIO[1]), generator=generator)
    aspect = log_ratio.exp()
    w = (target * aspect).sqrt().round()
    h = (target / aspect).sqrt().round()
    fits = (w > 0) & (w <= width) & (h > 0) & (h <= height)
    first = fits.float().argmax(dim=1)
    found = fits.any(dim=1)
    rows = torch.arange(n)
    w, h = w[rows, first], h[rows, first]
    top = (torch.rand(n, generator=generator) * (height - h + 1)).floor()
    left = (torch.rand(n, generator=generator) * (width - w + 1)).floor()
    ratio = width / height  # the fallback: a centre crop at the ratio clamped into RATIO
    fw, fh = (width, round(width / RATIO[1])) if ratio > RATIO[1] else (width, height)
    if ratio < RATIO[0]:
        fw, fh = width, round(width / RATIO[0])
    fw, fh = min(fw, width), min(fh, height)
    w = torch.where(found, w, torch.tensor(float(fw)))
    h = torch.where(found, h, torch.tensor(float(fh)))
    top = torch.where(found, top, torch.tensor(float((height - fh) // 2)))
    left = torch.where(found, left, torch.tensor(float((width - fw) // 2)))
    return torch.stack([left, top, left + w, top + h], dim=1)


def random_resized_crops(
    images: torch.Tensor, size: int, generator: torch.Generator | None = None
) -> torch.Tensor:
    """(B, C, H, W) float images → (B, C, size, size): a random resized crop of each, flipped with
    probability 1/2."""
    # imported here: torchvision costs a second to import, and only the raw-image models crop
    from torchvision.ops import roi_align

    b, _, height, width = images.shape
    boxes = crop_boxes(b, height, width, generator).to(images.device, images.dtype)
    indexed = torch.cat([torch.arange(b, device=images.device, dtype=images.dtype)[:, None], boxes], dim=1)
    crops = roi_align(
        images, indexed, output_size=(size, size), spatial_scale=1.0, sampling_ratio=2, aligned=True
    )
    flip = torch.rand(b, generator=generator) < 0.5
    return torch.where(flip.to(images.device)[:, None, None, None], crops.flip(-1), crops)


def centre_crops(images: torch.Tensor, size: int) -> torch.Tensor:
    """(B, C, H, W) → (B, C, size, size): the centre crop (evaluation), or the images when size is larger."""
    height, width = images.shape[-2:]
    if size >= min(height, width):
        return images
    top, left = (height - size) // 2, (width - size) // 2
    return images[..., top : top + size, left : left + size]
