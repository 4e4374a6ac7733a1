"""Locked-image (LiT) training from the frozen tower's cached embeddings (TrainConfig `image_cache`).

With the image tower locked whole (LiT: Zhai et al., "LiT: Zero-Shot Transfer with Locked-image text Tuning",
CVPR 2022), its output for a stored image is the same at every step, so the run reads the embeddings that
:mod:`vse_ray.evaluation.image_cache` keeps in the data folder for the train and val splits instead of the
pixels: `ClipModel.encode_images` takes the (B, E) rows and returns them unit-normalised, and only the
text tower (with the logit scale) runs. The cache is the one ``vse-ray evaluate --model clip --image-cache``
reads, named by the same label of the model's options (`model_label`); the driver computes a missing one
with Ray Data before the workers start (`compute_missing_caches`). The settings under which a cache would
not stand for the tower are refused by `TrainConfig.validate`.
"""

from __future__ import annotations

from vse_ray.data.store.split_data import ImageStore
from vse_ray.evaluation.image_cache import (
    cache_folder,
    ensure_image_cache,
    has_image_cache,
    model_label,
    read_image_cache,
)
from vse_ray.train.config import TrainConfig
from vse_ray.train.model_input import check_split_input

CACHED_SPLITS = ("train", "val")  # the splits a training reads images of


def cache_label(cfg: TrainConfig) -> str:
    """The label of the run's model in the data folder's cache: its name and the hash of `model_params`."""
    return model_label(cfg.model, cfg.model_params)


def check_cache_input(cfg: TrainConfig) -> None:
    """Before Ray starts: each split without a cache yet stores the images to compute it from (ValueError
    naming the folder and how to keep the images, as for zero-shot scoring)."""
    for split in missing_caches(cfg):
        check_split_input(cfg.data_dir, split, cfg.model, cfg.model_params)


def missing_caches(cfg: TrainConfig) -> list[str]:
    """The splits of a run with `image_cache` whose cache the data folder does not hold yet."""
    label = cache_label(cfg)
    return [split for split in CACHED_SPLITS if not has_image_cache(cfg.data_dir, label, split)]


def compute_missing_caches(cfg: TrainConfig) -> None:
    """On the driver, before the workers start: the caches of the train and val splits, each computed by
    the Ray Data stage of :mod:`vse_ray.evaluation.image_cache` when the data folder has none yet."""
    label = cache_label(cfg)
    for split in CACHED_SPLITS:
        ensure_image_cache(cfg.data_dir, split, cfg.model, cfg.model_params, label, cfg.eval_batch_size)


def cached_store(cfg: TrainConfig, split: str) -> ImageStore:
    """A worker's image side of `split`: the cached embeddings (n, E) in the split's stored order."""
    cached = read_image_cache(cfg.data_dir, cache_label(cfg), split)
    if cached is None:
        folder = cache_folder(cfg.data_dir, cache_label(cfg), split)
        raise ValueError(
            f"{folder}: no cached image embeddings; `vse-ray train` with image_cache computes them before "
            "the workers start"
        )
    return ImageStore(*cached)
