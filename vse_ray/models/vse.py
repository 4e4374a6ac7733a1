"""VSE++ (Faghri et al., BMVC 2018): s(i, c) = f(i) · g(c) (eq. 3); f projects CNN features (eq. 1)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from vse_ray.models.base import RetrievalModel
from vse_ray.models.image_encoder import CNNImageEncoder, ImageProjection
from vse_ray.models.region_input import check_region_features
from vse_ray.models.text_encoder import GRUTextEncoder


class VSEModel(RetrievalModel):
    """Image encoder + caption encoder into one joint space of dimension `embed_dim` (model name "vsepp").

    Reads pooled features (B, D_φ), raw pixels when `cnn` is given (the CNN is fine-tuned end to end), or
    region features (B, R, D_φ) when `regions` is R, which the projection reads flattened to R · D_φ.

    Args:
        vocab_size: Caption vocabulary size.
        feature_dim: Size of precomputed image features (ignored when `cnn` is given).
        word_dim: Word embedding size.
        embed_dim: Joint embedding size D.
        normalize_image: L2-normalise image embeddings (False: the VSE0 variant of VSE++ Sec. 3).
        cnn: Backbone name to fine-tune from raw images, or None to project precomputed features.
        cnn_weights: torchvision weights for `cnn` (None: random init).
        feature_norm: L2-normalise the CNN feature before the projection (VSE++'s full-image encoder).
        crop: With `cnn`: train on a random resized crop of this side per image and step (VSE++ "RC"), the
            centre crop at evaluation; 0 uses the stored images whole. A frozen CNN in the loop (RC without
            fine-tuning) is `lr_groups: {image_encoder.cnn.: 0}`.
        regions: Read (B, R, D_φ) region features with R = `regions` and project their concatenation
            (R · D_φ → D), as LSEH's released VSE++ precomp encoder does with 36 × 2048 bottom-up regions;
            0 reads pooled features.
    """

    kind = "embedding"
    feature_layout = "pooled"
    input_layouts = ("pooled", "pixels", "regions")
    config_fields = ("normalize_image",)

    def __init__(
        self,
        vocab_size: int,
        feature_dim: int,
        word_dim: int = 300,
        embed_dim: int = 1024,
        normalize_image: bool = True,
        cnn: str | None = None,
        cnn_weights: str | None = None,
        feature_norm: bool = False,
        crop: int = 0,
        regions: int = 0,
    ):
        super().__init__()
        if crop and cnn is None:
            raise ValueError("crop: needs the CNN in the loop (finetune), the stored features are fixed")
        if regions < 0 or (regions and cnn is not None):
            raise ValueError(f"regions: a region count >= 0 for stored features (no CNN), got {regions}")
        self.regions = regions
        self.feature_layout = "pixels" if cnn is not None else "regions" if regions else "pooled"
        if cnn is None:
            self.image_encoder: nn.Module = ImageProjection(
                feature_dim * max(regions, 1), embed_dim, normalize_image, feature_norm
            )
        else:
            self.image_encoder = CNNImageEncoder(
                cnn, embed_dim, normalize_image, cnn_weights, feature_norm, crop
            )
        self.text_encoder = GRUTextEncoder(vocab_size, word_dim, embed_dim)

    @classmethod
    def layouts_for(cls, model_params: dict[str, Any]) -> tuple[str, ...]:
        """Regions when `regions` is set, else pooled features (or pixels with a CNN)."""
        return ("regions",) if model_params.get("regions") else ("pooled", "pixels")

    @classmethod
    def layout_hint(cls, layout: str) -> str:
        """Region features read concatenated with `model_params.regions`."""
        return (
            "set model_params.regions to their count R to project them concatenated"
            if layout == "regions"
            else ""
        )

    def encode_images(self, images: torch.Tensor) -> torch.Tensor:
        """(B, D_φ) features, (B, R, D_φ) regions (`regions` R) or (B, H, W, 3) uint8 images → (B, D)."""
        if self.feature_layout == "regions":
            check_region_features(images, type(self).__name__, self.regions)
            return self.image_encoder(images.flatten(1))
        if self.feature_layout == "pooled" and images.dim() == 3:
            raise ValueError(
                f"{type(self).__name__} reads pooled features (B, D), got regions {tuple(images.shape)}: "
                + self.layout_hint("regions")
            )
        return self.image_encoder(images)

    def encode_captions(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """(B, L) token ids + (B,) lengths → (B, D) unit vectors."""
        return self.text_encoder(tokens, lengths)
