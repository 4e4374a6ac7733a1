"""CNN image features as a stateful callable for ``Dataset.map_batches`` in an actor pool."""

from __future__ import annotations

import numpy as np
import torch

from vse_ray.features.cnn import build_cnn
from vse_ray.features.crops import crop_batch
from vse_ray.features.weights import check_weights


def build_frozen_cnn(
    cnn: str, weights: str | None, init_seed: int = 0, grid: bool = False
) -> tuple[torch.nn.Module, int]:
    """The backbone in eval mode, no gradients; random weights are seeded: every actor builds the same net.

    Args:
        cnn: A name of :data:`vse_ray.features.cnn.CNN_NAMES` (``"small"`` is the tiny test option).
        weights: torchvision weights name (e.g. ``"IMAGENET1K_V1"``, loaded through torchvision's cache and
            downloaded on first use) or None for a random initialisation from ``init_seed``.
        init_seed: Seed of the random initialisation.
        grid: Keep the last convolution map as regions (see :func:`vse_ray.features.cnn.build_cnn`).

    Returns:
        The model and its feature dimension (ResNet-152 2048, VGG19 4096, ResNet-18 512).
    """
    check_weights(cnn, weights)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(init_seed)
        model, dim = build_cnn(cnn, weights, grid)
    return model.eval().requires_grad_(False), dim


class CNNFeatureExtractor:
    """Adds a ``feature`` column computed from a ``pixels`` (n, H, W, 3) uint8 column: (n, D) float32, or
    with ``grid`` the last convolution map as (n, h·w, D) regions.

    Rows whose ``reject`` column is non-empty (images that failed to load) get a zero vector and are not
    sent through the CNN. Use with ``map_batches(CNNFeatureExtractor, fn_constructor_kwargs=...,
    compute=ray.data.ActorPoolStrategy(size=n), num_gpus=...)``.

    Args:
        cnn: Backbone name.
        weights: torchvision weights name or None (random, seeded by ``init_seed``).
        crop: Side of the square crops; None = whole image.
        ten_crop: Mean of the 10-crop features (VSE++ "10C") instead of the centre crop.
        init_seed: Seed of a random initialisation.
        device: ``"cuda"`` when a GPU is assigned, else ``"cpu"``; None picks by availability.
        batch_size: Images per forward pass.
        grid: Region features from the last convolution map instead of the pooled vector.
        num_threads: torch intra-op threads on CPU (None leaves torch's default).
    """

    def __init__(
        self,
        cnn: str,
        weights: str | None = None,
        crop: int | None = None,
        ten_crop: bool = False,
        init_seed: int = 0,
        device: str | None = None,
        batch_size: int = 64,
        num_threads: int | None = None,
        grid: bool = False,
    ):
        if num_threads is not None:
            torch.set_num_threads(num_threads)
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.model, self.dim = build_frozen_cnn(cnn, weights, init_seed, grid)
        self.model.to(self.device)
        self.crop, self.ten_crop, self.batch_size = crop, ten_crop, batch_size

    @torch.inference_mode()
    def features(self, pixels: np.ndarray) -> np.ndarray:
        """(n, H, W, 3) uint8 → (n, D) float32 (or (n, R, D) grid regions), the mean over crops of the
        penultimate-layer output."""
        chunks = []
        for start in range(0, len(pixels), self.batch_size):
            crops = crop_batch(pixels[start : start + self.batch_size], self.crop, self.ten_crop)
            n, n_crops = crops.shape[:2]
            feats = self.model(crops.flatten(0, 1).to(self.device))
            chunks.append(feats.reshape(n, n_crops, *feats.shape[1:]).mean(dim=1).float().cpu().numpy())
        return np.concatenate(chunks)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        pixels = batch.pop("pixels")
        ok = np.array([not reason for reason in batch.get("reject", [""] * len(pixels))], dtype=bool)
        feats = self.features(pixels[ok] if ok.any() else pixels[:1])
        batch["feature"] = np.zeros((len(pixels), *feats.shape[1:]), dtype=np.float32)
        if ok.any():
            batch["feature"][ok] = feats
        return batch
