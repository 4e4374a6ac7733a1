"""TrainConfig: every knob of one training run, with defaults from VSE++ Sec. 3.2."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_TUPLE_FIELDS = ("eval_ks", "cs_ks", "ncs_ks")
PLACEMENT_STRATEGIES = ("PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD")  # Ray's ScalingConfig


@dataclass
class TrainConfig:
    """One training run. Defaults: Adam 2e-4, ×0.1 after 15 epochs, 30 epochs, batch 128, clip 2 (VSE++).

    `warmup_epochs` > 0 trains the first epochs with the sum-of-hinges loss (VSE++ eq. 5, margin 0.2) whatever
    `loss` is, then switches to `loss`: hardest-negative losses need a reasonable embedding first (VSE++
    Sec. 4.1 observes that max-of-hinges from a random start can stay near collapse). 0 = the paper recipe.
    `init_checkpoint` starts a fresh run from a checkpoint of an identical run stopped after its warm-up (same
    seed, model, optimiser and schedule): several losses can share one warm-up, with the result they would
    reach training it each.

    `storage_path`, `run_name`, `tracking_uri` and `experiment` left empty are derived by `resolved()`:
    `<output_dir>/ray_results`, `<dataset>-<loss>-s<seed>`, `sqlite:///<output_dir>/mlflow.db`, the dataset
    name.

    `train_images` > 0 trains on the captions of the first N train images only (a data-size axis);
    `shuffle_relevance` permutes the loss's relevance vectors across the train captions (a control: same
    values, no meaning).

    `placement_strategy` places the Ray Train workers (Ray's `ScalingConfig`): PACK (Ray's default) fills one
    node first; SPREAD puts them on different nodes where it can and, after a node is lost, restarts the group
    on the nodes that remain; STRICT_SPREAD requires one node per worker.
    """

    data_dir: str
    model: str = "vsepp"
    model_params: dict[str, Any] = field(default_factory=dict)
    loss: str = "vsepp"
    loss_params: dict[str, Any] = field(default_factory=dict)
    epochs: int = 30
    batch_size: int = 128
    lr: float = 2e-4
    lr_update: int = 15
    grad_clip: float = 2.0
    warmup_epochs: int = 0
    init_checkpoint: str = ""
    train_images: int = 0
    shuffle_relevance: bool = False
    word_dim: int = 300
    embed_dim: int = 1024
    normalize_image: bool = True
    finetune: bool = False
    cnn: str = "resnet152"
    cnn_weights: str | None = "IMAGENET1K_V1"
    num_workers: int = 1
    cpus_per_worker: float = 1.0
    placement_strategy: str = "PACK"
    use_gpu: bool = False
    seed: int = 0
    output_dir: str = "vse_ray_out"
    storage_path: str | None = None
    run_name: str | None = None
    tracking_uri: str | None = None
    experiment: str | None = None
    max_failures: int = 1
    eval_ks: tuple[int, ...] = (1, 5, 10)
    cs_ks: tuple[int, ...] = (5, 10, 100, 1000)
    ncs_ks: tuple[int, ...] = (1, 5, 10, 25, 50)
    eval_batch_size: int = 512

    def validate(self) -> TrainConfig:
        """Raise ValueError naming the first invalid field; return self."""
        from vse_ray.losses import LOSS_NAMES, make_loss
        from vse_ray.models.cnn import CNN_NAMES
        from vse_ray.models.registry import MODELS

        if not self.data_dir:
            raise ValueError("data_dir: required (a precompute output folder)")
        if not isinstance(self.model, str) or self.model not in MODELS:
            raise ValueError(f"model: must be one of {sorted(MODELS)}, got {self.model!r}")
        if not isinstance(self.model_params, dict):
            raise ValueError(f"model_params: must be a dict, got {type(self.model_params).__name__}")
        if self.loss not in LOSS_NAMES:
            raise ValueError(f"loss: must be one of {LOSS_NAMES}, got {self.loss!r}")
        if not isinstance(self.loss_params, dict):
            raise ValueError(f"loss_params: must be a dict, got {type(self.loss_params).__name__}")
        try:
            make_loss(self.loss, **self.loss_params)
        except (TypeError, ValueError) as err:
            raise ValueError(f"loss_params of {self.loss!r}: {err}") from err
        positive_ints = ("epochs", "batch_size", "lr_update", "word_dim", "embed_dim", "num_workers")
        for name in (*positive_ints, "eval_batch_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name}: must be a positive integer, got {value!r}")
        if not isinstance(self.warmup_epochs, int) or not 0 <= self.warmup_epochs <= self.epochs:
            raise ValueError(f"warmup_epochs: must be an integer in [0, epochs], got {self.warmup_epochs!r}")
        if type(self.train_images) is not int or self.train_images < 0:
            raise ValueError(f"train_images: must be an integer >= 0 (0 = all), got {self.train_images!r}")
        if self.init_checkpoint and not Path(self.init_checkpoint).exists():
            raise ValueError(f"init_checkpoint: no such file or folder: {self.init_checkpoint}")
        if self.batch_size < 2:
            raise ValueError(
                f"batch_size: needs at least 2 pairs for in-batch negatives, got {self.batch_size}"
            )
        for name in ("lr", "grad_clip", "cpus_per_worker"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name}: must be a positive finite number, got {value!r}")
        if self.placement_strategy not in PLACEMENT_STRATEGIES:
            raise ValueError(
                f"placement_strategy: must be one of {PLACEMENT_STRATEGIES}, got {self.placement_strategy!r}"
            )
        if self.finetune and self.cnn not in CNN_NAMES:
            raise ValueError(f"cnn: must be one of {CNN_NAMES}, got {self.cnn!r}")
        if not isinstance(self.max_failures, int) or self.max_failures < -1:
            raise ValueError(f"max_failures: must be an integer >= -1, got {self.max_failures!r}")
        for name in _TUPLE_FIELDS:
            ks = getattr(self, name)
            if not ks or any(not isinstance(k, int) or k < 1 for k in ks):
                raise ValueError(f"{name}: must be a non-empty tuple of positive integers, got {ks!r}")
        return self

    def resolved(self) -> TrainConfig:
        """A copy with absolute paths and the derived names filled in."""
        from vse_ray.tracking.uri import resolve_tracking_uri

        out = Path(self.output_dir).expanduser().resolve()
        dataset = Path(self.data_dir).expanduser().resolve().name
        return dataclasses.replace(
            self,
            data_dir=str(Path(self.data_dir).expanduser().resolve()),
            output_dir=str(out),
            storage_path=str(Path(self.storage_path).expanduser().resolve())
            if self.storage_path
            else str(out / "ray_results"),
            run_name=self.run_name or f"{dataset}-{self.loss}-s{self.seed}",
            tracking_uri=resolve_tracking_uri(self.tracking_uri, out),
            experiment=self.experiment or dataset,
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict (JSON-safe) that `from_dict` reads back."""
        d = dataclasses.asdict(self)
        for name in _TUPLE_FIELDS:
            d[name] = list(d[name])
        return d

    def to_flat_dict(self) -> dict[str, str | int | float | bool]:
        """MLflow-safe scalar params: loss_params flattened as `loss.<name>`, tuples as comma lists."""
        flat: dict[str, str | int | float | bool] = {}
        for key, value in self.to_dict().items():
            if key == "loss_params":
                flat.update({f"loss.{k}": _scalar(v) for k, v in sorted(value.items())})
            elif key == "model_params":
                flat.update({f"model.{k}": _scalar(v) for k, v in sorted(value.items())})
            else:
                flat[key] = _scalar(value)
        return flat

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrainConfig:
        """Build from a dict as written by `to_dict` (unknown keys → ValueError naming them)."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"unknown TrainConfig field(s): {unknown}")
        kwargs = dict(d)
        for name in _TUPLE_FIELDS:
            if name in kwargs:
                kwargs[name] = tuple(int(k) for k in kwargs[name])
        return cls(**kwargs)


def _scalar(value: Any) -> str | int | float | bool:
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    if value is None:
        return "None"
    return value
