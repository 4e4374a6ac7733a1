"""Does the precompute folder give the image input the chosen model reads? Checked before anything starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vse_ray.data.store.readers import load_manifest, table_schema
from vse_ray.data.store.split_data import ImageStore
from vse_ray.models import model_class
from vse_ray.train.config import TrainConfig

LAYOUT_WORDS = {
    "pooled": "pooled features (D,)",
    "regions": "region features (R, D)",
    "pixels": "raw images",
}


def reads_pixels(cfg: TrainConfig) -> bool:
    """Whether a training reads the stored images: a CNN fine-tuned on them (`finetune`), or a model that
    reads nothing else (CLIP's image tower)."""
    return cfg.finetune or model_class(cfg.model).layouts_for(cfg.model_params) == ("pixels",)


def stored_layout(data_dir: str, finetune: bool) -> tuple[str, list[int]]:
    """("pixels" | "regions" | "pooled", the manifest's feature_shape) of a precompute folder."""
    shape = list(load_manifest(data_dir).get("dims", {}).get("feature_shape", []))
    if finetune:
        return "pixels", shape
    return ("regions" if len(shape) == 2 else "pooled"), shape


def check_model_input(
    model: str,
    layout: str,
    where: str,
    shape: list[int] | tuple[int, ...],
    model_params: dict[str, Any] | None = None,
) -> None:
    """ValueError naming the model, what it needs, and what `where` holds, when the layouts differ (the
    layouts of the model as `model_params` build it)."""
    cls = model_class(model)
    accepted = cls.layouts_for(model_params or {})
    if layout not in accepted:
        needs = " or ".join(LAYOUT_WORDS[a] for a in accepted)
        hint = cls.layout_hint(layout)
        raise ValueError(
            f"model '{model}' needs {needs}, but {where} holds {LAYOUT_WORDS[layout]} of shape {tuple(shape)}"
            + (f" ({hint})" if hint else "")
        )


def check_data_for_model(
    data_dir: str, model: str, finetune: bool, model_params: dict[str, Any] | None = None
) -> None:
    """Early check on the manifest alone (no feature is read)."""
    layout, shape = stored_layout(data_dir, finetune)
    where = f"{Path(data_dir) / 'manifest.json'} (dims.feature_shape)"
    check_model_input(model, layout, where, shape, model_params)


def check_stored_images(cfg: TrainConfig) -> None:
    """Before anything starts: a training that reads the stored images (:func:`reads_pixels`), not their
    cached embeddings, finds them in its train and val splits; else ValueError naming the split's folder,
    what reads them and how to keep them."""
    if cfg.image_cache or not reads_pixels(cfg):
        return
    reader = "fine-tuning the CNN (finetune)" if cfg.finetune else f"model '{cfg.model}' (its image tower)"
    for split in ("train", "val"):
        if "image" not in table_schema(cfg.data_dir, "features", split).names:
            folder = Path(cfg.data_dir) / "features" / f"split={split}"
            raise ValueError(
                f"{folder}: no stored images, which {reader} reads; precompute the folder again with "
                "--keep-images yes"
            )


def check_split_input(data_dir: str, split: str, model: str, model_params: dict[str, Any]) -> None:
    """Before an untrained model scores a split: the split holds the image input the model reads (its
    stored images for a model that reads pixels), else ValueError as `check_model_input`."""
    if "pixels" in model_class(model).layouts_for(model_params):
        if "image" in table_schema(data_dir, "features", split).names:
            return
    check_data_for_model(data_dir, model, False, model_params)


def check_same_image_shape(train: ImageStore, other: ImageStore, data_dir: str, split: str) -> None:
    """ValueError naming both splits when their rows differ in shape (region count or feature width)."""
    a, b = tuple(train.values.shape[1:]), tuple(other.values.shape[1:])
    if a != b and not train.raw:
        root = Path(data_dir) / "features"
        raise ValueError(
            f"{root / f'split={split}'}: rows of shape {b} differ from {root / 'split=train'}: {a} "
            "(region count or feature width)"
        )
