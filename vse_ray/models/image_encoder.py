"""Image side f(i) = W_f^T φ(i) (VSE++ eq. 1), normalised unless disabled (VSE0 variant, Sec. 3)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from vse_ray.features.cnn import build_cnn
from vse_ray.features.random_crops import centre_crops, random_resized_crops
from vse_ray.models.initial_weights import xavier_linear
from vse_ray.models.normalize import l2_normalize

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


class ImageProjection(nn.Module):
    """Linear projection W_f of precomputed features φ(i), Xavier-uniform initialised as in VSE++."""

    def __init__(self, feature_dim: int, embed_dim: int, normalize: bool = True, feature_norm: bool = False):
        super().__init__()
        self.feature_norm = feature_norm  # L2-normalise φ(i) first
        self.fc = xavier_linear(feature_dim, embed_dim)
        self.normalize = normalize

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        emb = self.fc(l2_normalize(features) if self.feature_norm else features)
        return l2_normalize(emb) if self.normalize else emb


class CNNImageEncoder(nn.Module):
    """φ = CNN on raw uint8 images (B, H, W, 3), then the projection W_f: trained end to end.

    Args:
        cnn, embed_dim, normalize, weights: backbone, joint size, output L2 norm, torchvision weights.
        feature_norm: L2-normalise φ before the projection (VSE++'s full-image encoder does).
        crop: Side of the CNN input: a random resized crop with a random flip per image in training (VSE++
            "RC"), the centre crop at evaluation; 0 feeds the stored images whole.
    """

    mean: torch.Tensor  # ImageNet normalisation, (1, 3, 1, 1)
    std: torch.Tensor

    def __init__(
        self,
        cnn: str,
        embed_dim: int,
        normalize: bool = True,
        weights: str | None = None,
        feature_norm: bool = False,
        crop: int = 0,
    ):
        super().__init__()
        self.cnn, feature_dim = build_cnn(cnn, weights)
        self.proj = ImageProjection(feature_dim, embed_dim, normalize)
        self.feature_norm, self.crop = feature_norm, crop
        self.register_buffer("mean", torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(IMAGENET_STD).view(1, 3, 1, 1), persistent=False)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if images.dim() != 4 or images.shape[-1] != 3:
            raise ValueError(f"images must be (B, H, W, 3) uint8, got shape {tuple(images.shape)}")
        x = images.permute(0, 3, 1, 2).float().div_(255.0)
        if self.crop:
            x = random_resized_crops(x, self.crop) if self.training else centre_crops(x, self.crop)
        features = self.cnn((x - self.mean) / self.std)
        return self.proj(l2_normalize(features) if self.feature_norm else features)


# A VSE model's keys: on precomputed features its projection is `image_encoder.fc` (ImageProjection); with the
# CNN in the loop it is `image_encoder.proj.fc` after `image_encoder.cnn` (CNNImageEncoder).
STORED_PROJECTION, CNN_PROJECTION, CNN = "image_encoder.fc.", "image_encoder.proj.fc.", "image_encoder.cnn."


def projection_for_the_cnn(theirs: dict[str, Any], ours: dict[str, Any]) -> dict[str, Any]:
    """Checkpoint weights `theirs` keyed as the model's `ours` where a first stage on precomputed features
    starts a second stage with the CNN in the loop (the ladder code's fine-tuning: ``--snapshot`` loads the
    joint embedding, the CNN keeps its ImageNet weights): the stored-feature projection becomes the CNN
    encoder's, the CNN stays as built. Any other checkpoint is returned as it is."""
    if not any(k.startswith(CNN) for k in ours) or any(k.startswith(CNN) for k in theirs):
        return theirs
    if not any(k.startswith(STORED_PROJECTION) for k in theirs):
        return theirs
    moved = {
        (CNN_PROJECTION + k.removeprefix(STORED_PROJECTION) if k.startswith(STORED_PROJECTION) else k): v
        for k, v in theirs.items()
    }
    return {**{k: v for k, v in ours.items() if k.startswith(CNN)}, **moved}
