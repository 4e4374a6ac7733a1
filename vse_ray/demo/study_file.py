"""Where each `vse-ray demo` option sits in the shipped study `demo` (light: `--help` shows these values)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vse_ray.resources import load_yaml

DEMO_STUDY = "demo"
# The keys of each option in the study file; `lr_update` N sets lr_milestones [N].
OPTION_KEYS: dict[str, tuple[str, ...]] = {
    "seeds": ("seeds",),
    "train_images": ("data", "embedded", "train_images"),
    "val_images": ("data", "embedded", "val_images"),
    "test_images": ("data", "embedded", "test_images"),
    "seed": ("data", "embedded", "seed"),
    "epochs": ("epochs",),
    "warmup_epochs": ("warmup_epochs",),
    "lr": ("train", "lr"),
    "lr_update": ("train", "lr_milestones"),
    "batch_size": ("train", "batch_size"),
    "cnn": ("train", "cnn"),
    "embed_dim": ("train", "embed_dim"),
    "word_dim": ("train", "word_dim"),
    "finetune": ("train", "finetune"),
    "concurrent": ("resources", "concurrent"),
}


def demo_file() -> tuple[Path, dict[str, Any]]:
    """``(path, document)`` of the shipped demo study."""
    return load_yaml("study", DEMO_STUDY)


def option_value(raw: dict[str, Any], name: str) -> Any:
    """The value of option `name` in the study document `raw`."""
    node: Any = raw
    for key in OPTION_KEYS[name]:
        node = node[key]
    return node[0] if name == "lr_update" else node


def set_option(raw: dict[str, Any], name: str, value: Any) -> None:
    """Write option `name`'s `value` into the study document `raw`."""
    *parents, key = OPTION_KEYS[name]
    node = raw
    for parent in parents:
        node = node.setdefault(parent, {})
    node[key] = [value] if name == "lr_update" else value
