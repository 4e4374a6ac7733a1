"""Recipes: a paper's table row as a named YAML file of training settings (``recipes/<name>.yaml``).

The recipes ship in the package (``vse_ray.resources``): a name resolves there, a path as a path.

A recipe has these top-level keys::

    paper:      where the row comes from (file, table, row) and how the paper scored its numbers: protocol
                (the image set: full, coco1k, coco5k, first1k), split (test, or val: the validation images),
                ncs_reference (cider, spice) and cs_captions (all, first): `vse-ray evaluate --paper`
    reports:    the numbers the paper reports for it (metric name → value)
    precompute: PrecomputeConfig fields of the features the row was trained on
    train:      TrainConfig fields: model, loss, loss_params, epochs, lr, lr_update, batch_size ...
    deviations: where training it still differs from the official code (sentences)
    base:       another recipe this one repeats, with the keys above written over it
    init_from:  the recipe (a shipped name, or a file beside this one) of a first training stage whose run's
                weights this one starts from (a second stage, such as VSE++'s fine-tuning of the CNN); a run
                gives them with ``init_weights``

``base`` keeps one fact in one place: a COCO row names its Flickr30K row and writes only what differs
(:func:`read_recipe` says how the two merge).

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

from vse_ray.data.precompute.config import PrecomputeConfig, stored_setting
from vse_ray.evaluation.protocols import Protocol
from vse_ray.losses import loss_hparams
from vse_ray.models import model_class
from vse_ray.resources import load_yaml, resource_dir, resource_names, shown_keys
from vse_ray.train.config import CheckedConfig, TrainConfig, fields_where, merge_overrides
from vse_ray.train.model_factory import training_options

RECIPE_KEYS = ("paper", "reports", "precompute", "train", "deviations", "base", "init_from")
PAPER_SCORING = ("protocol", "split", "ncs_reference", "cs_captions")  # the paper block's scoring keys
SPLITS = ("test", "val")  # where a paper's numbers were scored: its test images, or its validation images


@dataclass
class Recipe:
    """A parsed recipe: its file, its paper row, the reported numbers and the checked training config."""

    path: Path
    paper: dict[str, Any]
    reports: dict[str, float]
    precompute: dict[str, Any]
    checked: CheckedConfig
    init_from: str | None = None

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
        raise ValueError(f"{where}: {kind} {shown_keys(unknown)} unknown; allowed: {allowed}")


def read_recipe(name: str | Path, _seen: tuple[Path, ...] = ()) -> tuple[Path, dict[str, Any]]:
    """``(path, document)`` of recipe `name` (a shipped name or a path), its ``base`` chain merged in.

    A recipe with ``base: OTHER`` (a shipped name, or a path relative to the recipe's folder) is OTHER with
    its own keys written over it:

    - ``paper`` and ``reports`` describe the row itself and are never inherited; ``init_from`` is, unless the
      recipe names its own;
    - ``precompute`` and ``train`` merge key by key, nested mappings too, and ``null`` removes a key (back to
      its default); a recipe naming another ``loss`` (``model``) than its base starts ``loss_params``
      (``model_params``) afresh;
    - ``deviations`` are the base's followed by the recipe's own; an entry may be a one-key mapping
      ``{key: sentence}``, which replaces the base's entry of that key where it stands (``null`` removes it).

    Raises:
        ValueError: naming the file: not a mapping, a base that is missing or names itself in a cycle.
    """
    path, raw = load_yaml("recipe", name)
    raw = raw or {}
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: expected a mapping with keys {RECIPE_KEYS}")
    if isinstance(raw.get("init_from"), str):
        raw = {**raw, "init_from": _local_or_name(path, raw["init_from"])}
    if "base" not in raw:
        return path, raw
    base_name = raw["base"]
    if not isinstance(base_name, str) or not base_name:
        raise ValueError(f"{path}: base: expected the name of another recipe, got {base_name!r}")
    where = _local_or_name(path, base_name)
    if path.resolve() in _seen:
        raise ValueError(f"{path}: base: the chain {[p.name for p in _seen]} comes back to this recipe")
    try:
        _, base = read_recipe(where, (*_seen, path.resolve()))
    except ValueError as err:
        raise ValueError(f"{path}: base: {err}") from err
    merged = {k: v for k, v in raw.items() if k != "base"}
    if "init_from" in base:
        merged.setdefault("init_from", base["init_from"])
    for key in ("precompute", "train"):
        mine = raw.get(key) or {}
        if not isinstance(mine, dict):
            raise ValueError(f"{path}: {key}: expected a mapping")
        merged[key] = (
            _merge_train(base.get(key) or {}, mine) if key == "train" else _merge(base.get(key) or {}, mine)
        )
    merged["deviations"] = _merge_deviations(path, base.get("deviations") or [], raw.get("deviations") or [])
    return path, merged


def _local_or_name(path: Path, name: str) -> str:
    """Recipe `name` as the recipe at `path` names it: a file beside it (its path), else a shipped name."""
    local = path.parent / name
    return str(local) if local.suffix in (".yaml", ".yml") and local.is_file() else name


def _merge(base: dict[str, Any], mine: dict[str, Any]) -> dict[str, Any]:
    """`mine` written over `base`: mappings merged key by key, ``None`` removing a key."""
    out = dict(base)
    for key, value in mine.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _merge_train(base: dict[str, Any], mine: dict[str, Any]) -> dict[str, Any]:
    """As `_merge`, the parameters of a loss or model that the recipe replaces left behind."""
    base = dict(base)
    for kind in ("loss", "model"):
        if mine.get(kind) not in (None, base.get(kind)):
            base.pop(f"{kind}_params", None)
    return _merge(base, mine)


def _deviation_key(entry: Any) -> str | None:
    return next(iter(entry)) if isinstance(entry, dict) and len(entry) == 1 else None


def _merge_deviations(path: Path, base: list[Any], mine: list[Any]) -> list[Any]:
    """The base's deviations, then the recipe's: a keyed entry replaces (``null``: removes) the base's."""
    if not isinstance(base, list) or not isinstance(mine, list):
        raise ValueError(f"{path}: deviations: expected a list of sentences")
    out = list(base)
    for entry in mine:
        key = _deviation_key(entry)
        at = next((i for i, old in enumerate(out) if key is not None and _deviation_key(old) == key), None)
        if at is None and key is not None and entry[key] is None:
            raise ValueError(f"{path}: deviations: {key}: null, but the base has no deviation {key!r}")
        if at is None:
            out.append(entry)
        elif entry[key] is None:
            del out[at]
        else:
            out[at] = entry
    return out


def _sentences(path: Path, deviations: Any) -> list[str]:
    """The deviations as sentences (a keyed entry gives its sentence); ValueError naming the file."""
    sentences = []
    for entry in deviations if isinstance(deviations, list) else [None]:
        key = _deviation_key(entry)
        text = entry[key] if key is not None and isinstance(entry, dict) else entry
        if not isinstance(text, str):
            raise ValueError(f"{path}: deviations: expected a list of sentences (or {{key: sentence}})")
        sentences.append(text)
    return sentences


def _check_paper(path: Path, paper: Any) -> None:
    """The ``paper`` block is a mapping (file, table, row ...) whose scoring keys name a protocol
    (:class:`~vse_ray.evaluation.protocols.Protocol`) and a split of `SPLITS`."""
    if not isinstance(paper, dict):
        raise ValueError(f"{path}: paper: expected a mapping (file, table, row)")
    try:
        Protocol.of(paper)
    except ValueError as err:
        raise ValueError(f"{path}: paper.{err}") from err
    if paper.get("split", "test") not in SPLITS:
        raise ValueError(f"{path}: paper.split: expected one of {SPLITS}, got {paper['split']!r}")


def load_recipe(name: str, data_dir: str, overrides: list[str] | None = None, **fields: Any) -> Recipe:
    """Parse and check recipe `name`, apply `overrides`, then `fields` (run plumbing such as output_dir).

    Raises:
        ValueError: naming the recipe file and the key: an unknown top-level, precompute, train, loss or
            model key, or a value the config or the loss rejects.
    """
    path, raw = read_recipe(name)
    _check_params(str(path), "top-level key(s)", raw, list(RECIPE_KEYS))
    _check_paper(path, raw.get("paper") or {})
    precompute = raw.get("precompute") or {}
    _check_params(
        f"{path} precompute", "key(s)", precompute, [f.name for f in dataclasses.fields(PrecomputeConfig)]
    )
    deviations = _sentences(path, raw.get("deviations") or [])
    train = merge_overrides(raw.get("train") or {}, overrides or [])
    train.update(fields, data_dir=data_dir, deviations=deviations, recipe=_cli_name_of(path))
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
    init_from = raw.get("init_from")
    if init_from is not None and not (
        isinstance(init_from, str) and (init_from in recipe_names() or Path(init_from).is_file())
    ):
        raise ValueError(f"{path}: init_from: expected a shipped recipe or a recipe file, got {init_from!r}")
    return Recipe(path, raw.get("paper") or {}, raw.get("reports") or {}, precompute, checked, init_from)


# What a data folder was built with that a recipe's run reads, checked even where the recipe's precompute:
# block leaves it out (then at the value `vse-ray precompute --recipe` gives it: the default, resolved for the
# dataset): the captions and COCO's restval images in train (VSE++'s rV rows leave the default), the features
# (CNN, weights, resize, crops, grid, storage type), the vocabulary, and the S-BERT model behind the sbert
# relevance (BCLS's labels, the ladder's degrees, CS@K and NCS references). Not checked where left out: the
# input paths, the splits, kept images and extra relevance sources (a superset serves), the synthetic data's
# sizes, and the SVD settings (the LSEH recipes write theirs; no other loss reads the svd relevance).
CHECKED_DEFAULTS = (
    "restval",
    "captions_per_image",
    "precomp_test",
    "cnn",
    "weights",
    "resize",
    "crop",
    "ten_crop",
    "grid",
    "feature_dtype",
    "init_seed",
    "vocab_min_count",
    "vocab_file",
    "sbert_model",
)


def recipe_data_settings(precompute: dict[str, Any], dataset: str) -> dict[str, Any]:
    """A recipe's ``precompute:`` block with every `CHECKED_DEFAULTS` field it leaves out at the value
    precompute gives it for `dataset` (the block's own dataset wins): what a data folder must have been built
    with."""
    given: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in precompute.items()}
    # input paths only need to be present to resolve; a named vocabulary file is compared, not read here
    inputs: dict[str, Any] = {"karpathy_json": "-", "image_root": "-", "precomp_dir": "-", "vocab_file": None}
    full = PrecomputeConfig(**{"dataset": dataset, **given, **inputs}).resolved()
    return {**precompute, **{k: getattr(full, k) for k in CHECKED_DEFAULTS if k not in precompute}}


def check_recipe_data(recipe: Recipe, data_dir: str) -> None:
    """Refuse a data folder precomputed otherwise than the recipe's ``precompute:`` block says (every key
    written there, and `CHECKED_DEFAULTS` as `recipe_data_settings` resolves those the block leaves out), and
    a second stage (``init_from``) without the weights of its first stage's run (`check_recipe_start`).

    A recipe without a ``precompute:`` block trains on any data.

    Raises:
        ValueError: naming the recipe, the key, the recipe's value and the folder's.
    """
    check_recipe_start(recipe, data_dir)
    manifest_path = Path(data_dir) / "manifest.json"
    if not manifest_path.is_file() or not recipe.precompute:
        return  # no manifest: the data check names the unfinished folder
    stored = json.loads(manifest_path.read_text()).get("config", {})
    checked = recipe_data_settings(recipe.precompute, stored.get("dataset", "synthetic"))
    for key, wanted in checked.items():
        have = stored_setting(stored, key)
        if _same_setting(key, wanted, have):
            continue
        default = " (the default)" if key not in recipe.precompute else ""
        raise ValueError(
            f"{recipe.path}: precompute.{key} is {wanted!r}{default} but {data_dir} was precomputed with "
            f"{have!r}; run `vse-ray precompute --recipe {recipe.path.stem} --out DIR` for this recipe's data"
        )


def _same_setting(key: str, wanted: Any, have: Any) -> bool:
    if isinstance(wanted, list | tuple) and isinstance(have, list | tuple):
        return sorted(map(str, wanted)) == sorted(map(str, have))
    if key == "sbert_model" and isinstance(have, str) and isinstance(wanted, str):
        return Path(have).name == Path(wanted).name  # a local folder of the named model
    return wanted == have


# Training fields a first stage's run may set otherwise than its recipe and still start a second stage.
STAGE_FREE = ("init_checkpoint", "init_weights", "seed", "patience")


def check_recipe_start(recipe: Recipe, data_dir: str) -> None:
    """A second-stage recipe (``init_from``) needs ``init_weights``: a checkpoint of a run of its first-stage
    recipe, trained with that recipe's settings (its loss and training fields but `STAGE_FREE`, compared).

    Raises:
        ValueError: one line naming the recipe: no ``init_weights`` (saying which run to train first and how
            to pass its checkpoint), or a checkpoint whose settings differ from the first stage's (the keys).
    """
    stage1 = recipe.init_from
    if stage1 is None:
        return
    path = recipe.config.init_weights
    if not path:
        raise ValueError(
            f"{recipe.path}: a second stage: it starts from the weights of a run of recipe {stage1!r}; train "
            f"that first (`vse-ray train --recipe {stage1} --data {data_dir}`), then give the best "
            f"checkpoint it prints: `vse-ray train --recipe {_cli_name(recipe)} --data {data_dir} "
            "--set init_weights=CHECKPOINT`"
        )
    from vse_ray.checkpoint_files import load_checkpoint

    theirs = load_checkpoint(path, name=f"init_weights {path}")["config"]
    ours = load_recipe(stage1, data_dir).config.to_dict()
    compared = ["loss", *(k for k in fields_where("hyper") if k not in STAGE_FREE)]
    differ = [k for k in compared if theirs.get(k, ours[k]) != ours[k]]
    if differ:
        raise ValueError(
            f"{recipe.path}: init_weights {path} was trained with other {differ} than recipe {stage1!r}, its "
            f"first stage; train `vse-ray train --recipe {stage1} --data {data_dir}` and give its checkpoint"
        )


def _cli_name(recipe: Recipe) -> str:
    """How ``--recipe`` names `recipe`: its name if shipped, else its file."""
    return _cli_name_of(recipe.path)


def _cli_name_of(path: Path) -> str:
    """A shipped recipe's name, else the recipe file's path."""
    return path.stem if path.resolve().parent == resource_dir("recipe").resolve() else str(path)
