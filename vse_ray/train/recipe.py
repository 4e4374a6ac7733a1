"""Recipes: a paper's table row as a named YAML file of training settings (``recipes/<name>.yaml``).

The recipes ship in the package (``vse_ray.resources``): a name resolves there, a path as a path.

A recipe has four top-level keys::

    paper:      where the row comes from (file, table, row)
    reports:    the numbers the paper reports for it (metric name → value)
    precompute: PrecomputeConfig fields of the features the row was trained on
    train:      TrainConfig fields: model, loss, loss_params, epochs, lr, lr_update, batch_size ...

``load_recipe`` checks every key (top level, ``precompute``, ``train``, ``loss_params`` against the loss's
constructor, ``model_params`` against the model's) and builds the loss, so a misspelt key fails before
Ray or MLflow start. ``overrides`` are ``KEY=VALUE`` strings (YAML values) over ``train``; a dotted key sets
one entry of ``loss_params`` or ``model_params`` (``loss_params.margin=0.2``).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vse_ray.data.precompute.config import PrecomputeConfig
from vse_ray.losses import loss_hparams
from vse_ray.models import model_class
from vse_ray.resources import load_yaml, resource_names
from vse_ray.train.config import CheckedConfig, TrainConfig, merge_overrides
from vse_ray.train.model_factory import training_options

RECIPE_KEYS = ("paper", "reports", "precompute", "train", "deviations")


@dataclass
class Recipe:
    """A parsed recipe: its file, its paper row, the reported numbers and the checked training config."""

    path: Path
    paper: dict[str, Any]
    reports: dict[str, float]
    precompute: dict[str, Any]
    checked: CheckedConfig

    @property
    def config(self) -> TrainConfig:
        """The training config (validated by `load_recipe`)."""
        return self.checked.config

    @property
    def deviations(self) -> list[str]:
        """Where training this recipe still differs from the official code."""
        return self.config.deviations


def recipe_names() -> list[str]:
    """Names of the recipes shipped in the package (``vse_ray/resources/recipes``)."""
    return resource_names("recipe")


def _check_params(where: str, kind: str, given: dict[str, Any], allowed: list[str]) -> None:
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise ValueError(f"{where}: {kind} {unknown} unknown; allowed: {allowed}")


def load_recipe(name: str, data_dir: str, overrides: list[str] | None = None, **fields: Any) -> Recipe:
    """Parse and check recipe `name`, apply `overrides`, then `fields` (run plumbing such as output_dir).

    Raises:
        ValueError: naming the recipe file and the key: an unknown top-level, precompute, train, loss or
            model key, or a value the config or the loss rejects.
    """
    path, raw = load_yaml("recipe", name)
    raw = raw or {}
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: expected a mapping with keys {RECIPE_KEYS}")
    _check_params(str(path), "top-level key(s)", raw, list(RECIPE_KEYS))
    precompute = raw.get("precompute") or {}
    _check_params(
        f"{path} precompute", "key(s)", precompute, [f.name for f in dataclasses.fields(PrecomputeConfig)]
    )
    deviations = raw.get("deviations") or []
    if not isinstance(deviations, list) or not all(isinstance(d, str) for d in deviations):
        raise ValueError(f"{path}: deviations: expected a list of sentences")
    train = merge_overrides(raw.get("train") or {}, overrides or [])
    train.update(fields, data_dir=data_dir, deviations=deviations)
    try:
        checked = TrainConfig.from_dict(train).checked()
    except (ValueError, TypeError) as err:
        raise ValueError(f"{path}: {err}") from err
    cfg = checked.config
    _check_params(f"{path} train", "loss_params", cfg.loss_params, list(loss_hparams(cfg.loss)))
    cls = model_class(cfg.model)
    own = list(training_options(cfg.model))
    _check_params(f"{path} train", "model_params", cfg.model_params, own)
    check_options = getattr(cls, "check_options", None)
    if check_options is not None:
        try:
            check_options(**cfg.model_params)
        except ValueError as err:
            raise ValueError(f"{path}: model '{cfg.model}': {err}") from err
    return Recipe(path, raw.get("paper") or {}, raw.get("reports") or {}, precompute, checked)


def check_recipe_data(recipe: Recipe, data_dir: str) -> None:
    """Refuse a data folder whose precompute differs from the recipe's ``precompute:`` block.

    Raises:
        ValueError: naming the recipe, the key, the recipe's value and the folder's.
    """
    manifest_path = Path(data_dir) / "manifest.json"
    if not manifest_path.is_file():
        return  # the data check names the unfinished folder
    stored = json.loads(manifest_path.read_text()).get("config", {})
    for key, wanted in recipe.precompute.items():
        have = stored.get(key)
        if _same_setting(key, wanted, have):
            continue
        raise ValueError(
            f"{recipe.path}: precompute.{key} is {wanted!r} but {data_dir} was precomputed with {have!r}; "
            f"run `vse-ray precompute --recipe {recipe.path.stem} --out DIR` for this recipe's data"
        )


def _same_setting(key: str, wanted: Any, have: Any) -> bool:
    if isinstance(wanted, list | tuple) and isinstance(have, list | tuple):
        return sorted(map(str, wanted)) == sorted(map(str, have))
    if key == "sbert_model" and isinstance(have, str) and isinstance(wanted, str):
        return Path(have).name == Path(wanted).name  # a local folder of the named model
    return wanted == have
