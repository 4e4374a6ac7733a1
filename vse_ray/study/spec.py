"""A study (`studies/*.yaml`): losses compared against a baseline over seeds, with controls.

```yaml
name: ladder-bcls-cs            # MLflow experiment `study-<name>`, Tune folders under <output>/ray_results
claim: Ladder and BCLS raise CS@K over VSE++ at about equal R@K      # free text, shown in the summary
data:                           # exactly one of:
  embedded: {train_images: 4000, val_images: 250, test_images: 1000, seed: 0}   # generated and precomputed
  # data_dir: path/to/precompute/output
baseline: vsepp                 # a key of `losses`
min_baseline_rsum: 400          # default 0; below it the summary's first line says WEAK BASELINE
seeds: 3                        # default 3; every loss of one seed starts from the same warm-up checkpoint
warmup_epochs: 3                # shared warm-up (train.warmup_loss, the sum of hinges), trained once per seed
# warmup_steps: 468             # or in steps: ceil(steps / steps per epoch) epochs at each train size
epochs: 6                       # epochs after the warm-up (a cap with train.patience)
train: {batch_size: 128, lr: 1.0e-3, lr_update: 4, patience: 2}   # TrainConfig fields shared by every run
                                # (lr_update / lr_milestones count epochs after the warm-up)
losses:                         # family -> make_loss hyper-parameters
  vsepp: {}
  bcls: {gamma: 50}
  # infonce_multi: {family: infonce, targets: multi}   # a row named otherwise than its family
controls:
  shuffled: [bcls]              # relevance vectors permuted across captions (same values, no meaning)
  oracle: [bcls]                # relevance_source=scene (the embedded data's ground truth)
  ablations: [bcls]             # each family's declared ablation (ABLATIONS)
train_images: [400, 1000, 4000] # optional axis: the whole study per train-set size (first N images)
resources: {cpus_per_trial: 1, gpus_per_trial: 0, concurrent: 0}
requires:                       # keys the command line must give (`--set KEY=VALUE`), with what each is
  train.model_params.pretrained: the open_clip local-dir folder of `vse-ray pretrain-clip`
```
`--set KEY=VALUE` (:func:`apply_sets`) writes a key of the file, dotted at any depth (``data.data_dir=DIR``),
before anything is checked. Everything is checked by `StudySpec.validate` before Ray or MLflow start; errors
name the file and key.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vse_ray.config_fields import default_of
from vse_ray.folder_names import check_plain_name
from vse_ray.losses import LOSS_NAMES, make_loss
from vse_ray.relevance.sources import ORACLE_SOURCES, SHUFFLED_SOURCES
from vse_ray.resources import load_yaml, parse_yaml, shown_key
from vse_ray.train.config import TrainConfig, fields_where, parse_override
from vse_ray.tune.space_checks import tunable_fields

# Each family's ablation: (variant name, hyper-parameters that switch the paper's extra term off).
ABLATIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "bcls": ("no-kendall", {"kendall": "none"}),  # Triplet-SN only
    "sam": ("no-triplet", {"triplet": False}),  # the adaptive-margin hinge alone
    "ladder": ("eq7", {"hard_contrastive": False}),  # full sums (eq. 7) instead of eq. 8's pairs
    "ladder_auto": ("eq7", {"hard_contrastive": False}),
}
CONTROLS = ("shuffled", "oracle", "ablations")
ORACLE_SOURCE = ORACLE_SOURCES[0]  # the embedded data's ground truth
EMBEDDED_KEYS = ("train_images", "val_images", "test_images", "seed")
RESOURCE_KEYS = ("cpus_per_trial", "gpus_per_trial", "concurrent")
EVALUATION_FIELDS = fields_where("evaluation")
STUDY_FIELDS = fields_where(study=True)  # TrainConfig fields the study itself sets per run


@dataclass(frozen=True)
class Variant:
    """One row of the study: a loss family with hyper-parameters, plain or under a control."""

    loss: str
    params: dict[str, Any]
    kind: str = ""  # "" | "shuffled" | "oracle" | an ablation name
    label: str = ""  # the study's key of the row when it is not the family's name

    @property
    def name(self) -> str:
        base = self.label or self.loss
        return f"{base}-{self.kind}" if self.kind else base


@dataclass
class StudySpec:
    """A parsed study file (see the module docstring); `source` names it in error messages."""

    name: str
    baseline: str
    losses: dict[str, dict[str, Any]]
    data: dict[str, Any] = field(default_factory=lambda: {"embedded": {}})
    claim: str = ""
    seeds: int = 3
    warmup_epochs: int = 3
    warmup_steps: int = 0
    epochs: int = 4
    train: dict[str, Any] = field(default_factory=dict)
    controls: dict[str, list[str]] = field(default_factory=dict)
    train_images: list[int] = field(default_factory=list)
    resources: dict[str, float] = field(default_factory=dict)
    min_baseline_rsum: float = 0.0
    requires: dict[str, str] = field(default_factory=dict)
    source: str = "<study>"

    @property
    def embedded(self) -> dict[str, int] | None:
        """Sizes and seed of the embedded dataset, or None when the study reads a precompute folder."""
        if "embedded" not in self.data:
            return None
        defaults = {"train_images": 2000, "val_images": 250, "test_images": 1000, "seed": 0}
        return {**defaults, **(self.data["embedded"] or {})}

    def variants(self) -> list[Variant]:
        """The baseline first, then each loss, then the controls in `CONTROLS` order."""
        order = [self.baseline, *(name for name in self.losses if name != self.baseline)]
        rows = [self._row(name) for name in order]
        for name in self.controls.get("shuffled", []):
            rows.append(self._row(name, "shuffled"))
        for name in self.controls.get("oracle", []):
            rows.append(self._row(name, "oracle", {"relevance_source": ORACLE_SOURCE}))
        for name in self.controls.get("ablations", []):
            kind, params = ABLATIONS[self.family(name)]
            rows.append(self._row(name, kind, params))
        return rows

    def family(self, name: str) -> str:
        """The loss family of row `name` of `losses`: its `family` key, else the name itself."""
        return str(self.losses[name].get("family", name))

    def _row(self, name: str, kind: str = "", extra: dict[str, Any] | None = None) -> Variant:
        params = {k: v for k, v in self.losses[name].items() if k != "family"}
        family = self.family(name)
        return Variant(family, {**params, **(extra or {})}, kind, "" if family == name else name)

    def train_sizes(self) -> list[int]:
        """Values of the train_images axis; [0] (all images) without one."""
        return list(self.train_images) or [0]

    def warmup_epochs_at(self, train_captions: int) -> int:
        """Warm-up epochs of a train set of `train_captions` captions: `warmup_epochs`, or with `warmup_steps`
        as many epochs as that many steps need (the same number of updates at every train size)."""
        if not self.warmup_steps:
            return self.warmup_epochs
        batch_size = self.train.get("batch_size", default_of(TrainConfig, "batch_size"))
        steps_per_epoch = train_captions // int(batch_size)
        if steps_per_epoch < 1:
            raise ValueError(f"{self.source}: train.batch_size: exceeds the {train_captions} train captions")
        return math.ceil(self.warmup_steps / steps_per_epoch)

    def lr_milestones(self, warmup_epochs: int) -> tuple[int, ...]:
        """Decay epochs of a run: `train.lr_milestones`, or every `train.lr_update` epochs, counted after the
        warm-up (so every train size gets the same schedule after a warm-up of any length)."""
        total = warmup_epochs + self.epochs
        if "lr_milestones" in self.train:
            return tuple(warmup_epochs + int(m) for m in self.train["lr_milestones"])
        every = int(self.train.get("lr_update", default_of(TrainConfig, "lr_update")))
        return tuple(range(warmup_epochs + every, total + 1, every)) or (total,)

    def run_config(
        self, data_dir: str, variant: Variant, seed: int, train_images: int, warmup_epochs: int | None = None
    ) -> TrainConfig:
        """The TrainConfig of one run (warm-up included in `epochs`; `init_checkpoint` set by the runner);
        `warmup_epochs` defaults to the file's."""
        warm = self.warmup_epochs if warmup_epochs is None else warmup_epochs
        shared = {k: v for k, v in self.train.items() if k not in ("lr_update", "lr_milestones")}
        milestones = self.lr_milestones(warm)
        if 0 in milestones:  # a decay right after no warm-up: the run starts at the decayed rate
            factor = float(shared.get("lr_factor", default_of(TrainConfig, "lr_factor")))
            lr = float(shared.get("lr", default_of(TrainConfig, "lr")))
            shared["lr"] = lr * factor ** milestones.count(0)
            milestones = tuple(m for m in milestones if m > 0) or (warm + self.epochs,)
        return TrainConfig(
            data_dir=data_dir,
            **shared,
            loss=variant.loss,
            loss_params=dict(variant.params),
            epochs=warm + self.epochs,
            warmup_epochs=warm,
            lr_milestones=milestones,
            seed=seed,
            train_images=train_images,
            shuffle_relevance=variant.kind == "shuffled",
        )

    def validate(self) -> StudySpec:
        """Raise ValueError '<file>: <key>: <what was expected>' for the first problem; return self."""
        where = self.source
        check_plain_name(self.name, f"{where}: name")
        self._check_data(where)
        for key in ("seeds", "epochs"):
            _positive_int(where, key, getattr(self, key))
        _positive_int(where, "warmup_epochs", self.warmup_epochs, minimum=0)
        _positive_int(where, "warmup_steps", self.warmup_steps, minimum=0)
        milestones = self.train.get("lr_milestones", [])
        if not isinstance(milestones, list | tuple) or any(type(m) is not int or m < 0 for m in milestones):
            raise ValueError(f"{where}: train.lr_milestones: expected epochs >= 0 after the warm-up")
        bound = self.min_baseline_rsum
        if isinstance(bound, bool) or not isinstance(bound, int | float) or not 0 <= bound <= 600:
            raise ValueError(f"{where}: min_baseline_rsum: expected a number in [0, 600], got {bound!r}")
        if not isinstance(self.losses, dict) or not self.losses:
            raise ValueError(f"{where}: losses: expected a mapping of loss family -> hyper-parameters")
        if self.baseline not in self.losses:
            raise ValueError(f"{where}: baseline: {self.baseline!r} is not one of losses {list(self.losses)}")
        for name, params in self.losses.items():
            if not isinstance(params, dict):
                raise ValueError(f"{where}: losses.{name}: expected a mapping of hyper-parameters")
            check_plain_name(str(name), f"{where}: losses.{name}")
            family = self.family(name)
            if family not in LOSS_NAMES:
                raise ValueError(
                    f"{where}: losses.{name}: unknown loss family {family!r}; expected one of {LOSS_NAMES}"
                )
            try:
                make_loss(family, **{k: v for k, v in params.items() if k != "family"})
            except (ValueError, TypeError) as err:
                raise ValueError(f"{where}: losses.{name}: {err}") from err
        allowed = [*(f for f in tunable_fields() if f not in STUDY_FIELDS), *EVALUATION_FIELDS, "use_gpu"]
        unknown = sorted(set(self.train) - set(allowed))
        if unknown:
            raise ValueError(f"{where}: train.{unknown[0]}: not a TrainConfig field a study sets; {allowed}")
        self._check_controls(where)
        sizes = self.train_images
        if not isinstance(sizes, list) or any(type(n) is not int or n < 1 for n in sizes):
            raise ValueError(f"{where}: train_images: expected a list of positive integers, got {sizes!r}")
        if self.embedded and sizes and max(sizes) > self.embedded["train_images"]:
            raise ValueError(
                f"{where}: train_images: {max(sizes)} exceeds data.embedded.train_images "
                f"{self.embedded['train_images']}"
            )
        unknown = sorted(set(self.resources) - set(RESOURCE_KEYS))
        if unknown:
            raise ValueError(f"{where}: resources.{unknown[0]}: unknown; expected some of {RESOURCE_KEYS}")
        for variant in self.variants():
            key = f"controls ({variant.name})" if variant.kind else f"losses.{variant.name}"
            try:
                make_loss(variant.loss, **variant.params)
                self.run_config("<data_dir>", variant, 0, max(self.train_sizes())).validate()
            except (ValueError, TypeError) as err:
                raise ValueError(f"{where}: {key}: {err}") from err
        return self

    def _check_data(self, where: str) -> None:
        if (
            not isinstance(self.data, dict)
            or len(self.data) != 1
            or next(iter(self.data))
            not in (
                "embedded",
                "data_dir",
            )
        ):
            raise ValueError(
                f"{where}: data: expected exactly one of 'embedded: {{...}}' or 'data_dir: PATH'"
            )
        if "data_dir" in self.data:  # the folder itself: `check_study_inputs`, before Ray starts
            return
        sizes = self.data["embedded"] or {}
        unknown = sorted(set(sizes) - set(EMBEDDED_KEYS))
        if unknown:
            raise ValueError(
                f"{where}: data.embedded.{unknown[0]}: unknown; expected some of {EMBEDDED_KEYS}"
            )
        for key, value in sizes.items():
            _positive_int(where, f"data.embedded.{key}", value, minimum=0 if key == "seed" else 1)

    def _check_controls(self, where: str) -> None:
        unknown = sorted(set(self.controls) - set(CONTROLS))
        if unknown:
            raise ValueError(f"{where}: controls.{unknown[0]}: unknown control; expected some of {CONTROLS}")
        for control, names in self.controls.items():
            if not isinstance(names, list):
                raise ValueError(f"{where}: controls.{control}: expected a list of loss families")
            for name in names:
                if name not in self.losses:
                    raise ValueError(f"{where}: controls.{control}: {name!r} is not one of losses")
                if control == "ablations" and self.family(name) not in ABLATIONS:
                    raise ValueError(
                        f"{where}: controls.ablations: {name!r} declares no ablation; "
                        f"families with one: {sorted(ABLATIONS)}"
                    )
                row = self._row(name)
                source = make_loss(row.loss, **row.params).relevance_source
                if control == "shuffled" and source not in SHUFFLED_SOURCES:
                    raise ValueError(
                        f"{where}: controls.shuffled: {name!r} uses relevance {source!r}; the shuffled "
                        f"control permutes caption vectors {sorted(SHUFFLED_SOURCES)}"
                    )


def _positive_int(where: str, key: str, value: Any, minimum: int = 1) -> None:
    if type(value) is not int or value < minimum:
        raise ValueError(f"{where}: {key}: expected an integer >= {minimum}, got {value!r}")


def parse_study(text: str, source: str = "<study>") -> StudySpec:
    """Parse and validate the YAML text of a study."""
    return study_from_yaml(parse_yaml(text, source), source)


def study_from_yaml(raw: Any, source: str) -> StudySpec:
    """Validate the loaded YAML document of a study (``source`` names it in errors)."""
    if not isinstance(raw, dict):
        raise ValueError(f"{source}: expected a mapping at the top level, got {type(raw).__name__}")
    names = {f.name for f in dataclasses.fields(StudySpec)} - {"source"}
    unknown = sorted(set(raw) - names)
    if unknown:
        raise ValueError(f"{source}: {shown_key(unknown[0])}: unknown key; expected some of {sorted(names)}")
    if "warmup_steps" in raw and "warmup_epochs" in raw:
        raise ValueError(f"{source}: warmup_steps: give the warm-up in steps or in epochs, not both")
    if "warmup_steps" in raw:
        raw["warmup_epochs"] = 0
    missing = [key for key in ("name", "baseline", "losses") if key not in raw]
    if missing:
        raise ValueError(f"{source}: {missing[0]}: required")
    raw = {k: ({} if v is None and k in ("train", "controls", "resources") else v) for k, v in raw.items()}
    raw["losses"] = (
        {k: (v or {}) for k, v in raw["losses"].items()} if isinstance(raw["losses"], dict) else raw["losses"]
    )
    return StudySpec(**raw, source=source).validate()


def apply_sets(raw: Any, items: list[str], source: str) -> Any:
    """The study document with ``KEY=VALUE`` overrides (YAML values) written in, a dotted key at any depth
    (``train.model_params.pretrained=DIR``); then every key of its ``requires`` must hold a value, else
    ValueError in one line naming the key, what it is and the option that gives it."""
    if not isinstance(raw, dict):
        return raw
    raw = copy.deepcopy(raw)
    for item in items:
        key, value = parse_override(item)
        path = [part.strip() for part in key.split(".")]
        if not all(path):
            raise ValueError(f"--set {item!r}: expected KEY=VALUE (a dotted key of the study file)")
        node = raw
        for i, part in enumerate(path[:-1]):
            if node.get(part) is None:
                node[part] = {}
            node = node[part]
            if not isinstance(node, dict):
                raise ValueError(f"--set {item!r}: {'.'.join(path[: i + 1])} is not a mapping")
        node[path[-1]] = value
    required = raw.get("requires") or {}
    if not isinstance(required, dict):
        raise ValueError(f"{source}: requires: expected a mapping of dotted key -> what it is")
    for key, what in required.items():
        node = raw
        for part in str(key).split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            raise ValueError(f"{source}: {key}: required: {what}; give it with --set {key}=...")
    return raw


def load_study(path: str | Path, seeds: int | None = None, sets: list[str] | None = None) -> StudySpec:
    """Read, parse and validate a study file, by path or shipped name (`studies/<name>.yaml`); ``seeds``
    replaces the file's number of seeds and ``sets`` writes keys (:func:`apply_sets`) before the one
    validation."""
    found, raw = load_yaml("study", path)
    raw = apply_sets(raw, sets or [], str(found))
    if seeds is not None and isinstance(raw, dict):
        raw = {**raw, "seeds": seeds}
    return study_from_yaml(raw, str(found))
