"""The input check of region-based models: (B, R, D) floating features, never pooled vectors or pixels."""

from __future__ import annotations

from torch import Tensor


def check_region_features(images: Tensor, model: str, n_regions: int | None = None) -> None:
    """ValueError unless ``images`` is a floating (B, R, D) tensor (with R = ``n_regions`` when given)."""
    if images.dim() == 2:
        raise ValueError(
            f"{model} scores regions against words and needs region features (B, R, D); got pooled features "
            f"{tuple(images.shape)}: use a precompute with a region axis (e.g. SCAN's bottom-up "
            "(N, 36, 2048) precomp) or an embedding model"
        )
    if images.dim() != 3 or not images.is_floating_point():
        raise ValueError(
            f"{model} needs floating region features (B, R, D), got {images.dtype} {tuple(images.shape)}"
        )
    if n_regions is not None and images.shape[1] != n_regions:
        raise ValueError(f"{model} was built for {n_regions} regions per image, got {images.shape[1]}")
