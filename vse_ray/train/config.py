"""TrainConfig: every knob of one training run, each field declared once with its role and help.

A field's metadata says what it is (`role`): a training setting ("hyper": tunable, recipes and sweeps set it),
run plumbing ("run": where and how a run executes) or an evaluation setting ("evaluation"). Three flags say
which fields a study sets per run (`study`), which a shared warm-up checkpoint must agree on (`warmup`) and
which `vse-ray train` offers as options (`cli`).
Every list of fields elsewhere (tunable fields, the study's, the warm-up's, the CLI's help and defaults) is
derived from this metadata, so a new field is one declaration here plus the code that reads it.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from vse_ray.config_fields import described
from vse_ray.folder_names import DEFAULT_OUTPUT_DIR
from vse_ray.losses.names import LOSS_NAMES
from vse_ray.metrics.registry import CUTOFFS
from vse_ray.models.names import DEFAULT_MODEL, MODEL_NAMES

_TUPLE_FIELDS = ("eval_ks", "cs_ks", "ncs_ks", "lr_milestones", "image_crop_scale")
_FLOAT_TUPLES = ("image_crop_scale",)  # the others hold integers
PLACEMENT_STRATEGIES = ("PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD")  # Ray's ScalingConfig
OPTIMIZERS = ("adam", "adamw")
LR_SCHEDULES = ("step", "cosine")
PRECISIONS = ("fp32", "bf16", "fp16")
NEGATIVES = ("image", "diagonal")
LOSS_SPANS = ("global", "local", "worker")
ROLES = ("hyper", "run", "evaluation")
NESTED = ("loss_params", "model_params", "warmup_params", "lr_groups")  # dict fields that take dotted keys


def _field(
    default: Any,
    help: str,
    role: str = "hyper",
    *,
    study: bool = False,
    warmup: bool = False,
    cli: bool = False,
) -> Any:
    """A dataclass field with its help and role metadata; ``cli``: an option of `vse-ray train`."""
    return described(default, help, role=role, study=study, warmup=warmup, cli=cli)


@dataclass
class TrainConfig:
    """One training run. Defaults: Adam 2e-4, ×0.1 after 15 epochs, 30 epochs, batch 128, clip 2 (VSE++).

    `warmup_epochs` > 0 trains the first epochs with `warmup_loss` (default the sum of hinges, VSE++ eq. 5,
    margin 0.2) whatever `loss` is, then switches to `loss`: hardest-negative losses need a reasonable
    embedding first (VSE++ Sec. 4.1 observes that max-of-hinges from a random start can stay near collapse).
    `init_checkpoint` starts a fresh run from a checkpoint of an identical run stopped after its warm-up, so
    several losses can share one warm-up: weights, optimiser, schedule and epoch count continue.
    `init_weights` starts a run's model weights only from another run's checkpoint, whatever its settings (a
    second training stage, such as VSE++'s fine-tuning of the CNN): optimiser, schedule, epochs start afresh.

    `storage_path`, `run_name`, `tracking_uri` and `experiment` left empty are derived by `resolved()`:
    `<output_dir>/ray_results`, `<dataset>-<loss>-s<seed>`, `sqlite:///<output_dir>/mlflow.db`, the dataset
    name. The help of every field is in its metadata (`help_of`); `cli` marks the options of `vse-ray train`.
    """

    data_dir: str = _field("", "Precompute output folder.", "run", warmup=True)
    model: str = _field(
        DEFAULT_MODEL,
        f"{' | '.join(MODEL_NAMES)} (vsepp: pooled features, finetune, or model_params.regions; "
        "vse_inf: regions; clip: the stored images).",
        warmup=True,
        cli=True,
    )
    model_params: dict[str, Any] = _field({}, "Model options (e.g. region_drop, text_encoder).", warmup=True)
    loss: str = _field("vsepp", f"{' | '.join(LOSS_NAMES)}.", "run", study=True, cli=True)
    loss_params: dict[str, Any] = _field({}, "Loss hyper-parameters (e.g. margin).", study=True)
    epochs: int = _field(30, "Epochs (the cap when patience is set).", study=True, cli=True)
    patience: int = _field(0, "Stop after N epochs without a better val rsum (0: train every epoch).")
    batch_size: int = _field(128, "Pairs per batch per worker.", warmup=True, cli=True)
    optimizer: str = _field("adam", "adam | adamw (decoupled weight decay).", warmup=True, cli=True)
    lr: float = _field(2e-4, "Learning rate.", warmup=True, cli=True)
    weight_decay: float = _field(
        0.0, "Weight decay (Adam: L2 in the gradient; AdamW: decoupled).", warmup=True, cli=True
    )
    lr_groups: dict[str, float] = _field(
        {},
        "Parameter-name prefix -> learning-rate multiplier (first matching prefix wins).",
        warmup=True,
    )
    lr_update: int = _field(
        15, "Epochs between learning-rate decays (when lr_milestones is empty).", warmup=True, cli=True
    )
    lr_milestones: tuple[int, ...] = _field((), "Epochs after which the learning rate decays.", warmup=True)
    lr_factor: float = _field(0.1, "Learning-rate decay factor.", warmup=True)
    lr_schedule: str = _field(
        "step",
        "step: x lr_factor at the milestones (per epoch) | cosine: lr_warmup_steps of linear warm-up, then "
        "a cosine to 0 at the last step (per step, as open_clip's cosine_lr).",
        warmup=True,
        cli=True,
    )
    lr_warmup_steps: int = _field(
        0, "Steps of linear learning-rate warm-up (lr_schedule cosine).", warmup=True, cli=True
    )
    weight_decay_exclude: bool = _field(
        False,
        "No weight decay on 1-D parameters (biases, norm gains), names with bn, ln or bias, and the logit "
        "scale (open_clip's rule).",
        warmup=True,
        cli=True,
    )
    lr_image: float = _field(1.0, "clip: learning-rate multiplier of the image tower.", warmup=True, cli=True)
    lr_text: float = _field(1.0, "clip: learning-rate multiplier of the text tower.", warmup=True, cli=True)
    layer_decay: float = _field(
        1.0,
        "clip: layer-wise learning-rate decay: group k of n in a tower trains at layer_decay^(n-1-k) x its "
        "rate (layer groups: embeddings, blocks, final norm, projection).",
        warmup=True,
        cli=True,
    )
    lock_image: bool = _field(False, "clip: lock the image tower (LiT).", warmup=True, cli=True)
    lock_image_unlocked_groups: int = _field(
        0, "clip: with lock_image, leave the last N layer groups of the image tower trainable.", warmup=True
    )
    freeze_image_epochs: int = _field(
        0, "clip: train the first N epochs with the image tower frozen.", warmup=True, cli=True
    )
    image_cache: bool = _field(
        False,
        "clip with lock_image: train and validate on the locked image tower's embeddings cached in the data "
        "folder (image_embeddings/, computed once with Ray Data when missing) instead of running the tower.",
        "run",
        cli=True,
    )
    image_crop_scale: tuple[float, ...] = _field(
        (),
        "clip: crop each training image as open_clip's train transform (a random resized crop per row, its "
        "area a share in [low, high] of the image; open_clip: [0.9, 1.0]); empty: no augmentation.",
        warmup=True,
    )
    precision: str = _field(
        "fp32", "fp32 | bf16 | fp16 autocast of the forward and loss (fp16: GPU only).", warmup=True, cli=True
    )
    grad_checkpointing: bool = _field(
        False, "clip: recompute the towers' blocks in backward (less memory, more time).", cli=True
    )
    grad_clip: float = _field(2.0, "Gradient norm clip.", warmup=True, cli=True)
    warmup_epochs: int = _field(
        0, "First epochs trained with warmup_loss.", study=True, warmup=True, cli=True
    )
    warmup_loss: str = _field("vse0", "Loss of the warm-up epochs (vse0: sum of hinges).", warmup=True)
    warmup_params: dict[str, Any] = _field({}, "Hyper-parameters of warmup_loss (e.g. margin).", warmup=True)
    negatives: str = _field(
        "image",
        "image: captions of the same image are not negatives | diagonal: only the pair itself is excluded.",
        warmup=True,
        cli=True,
    )
    loss_span: str = _field(
        "global",
        "Under DDP (embedding models), what one loss spans: global: every worker's pairs, (W*B)^2 "
        "similarities | local: the worker's B queries against all W*B candidates, the same gradients "
        "(open_clip's local_loss; infonce and clip only) | worker: the worker's own B x B pairs, no gather "
        "(CUSA's is_all_gather false).",
        warmup=True,
        cli=True,
    )
    caption_mask: float = _field(
        0.0, "Per-token probability of replacing a training token by <mask>.", warmup=True
    )
    caption_replace: float = _field(0.0, "Per-token probability of a random vocabulary token.", warmup=True)
    caption_delete: float = _field(0.0, "Per-token probability of deleting a training token.", warmup=True)
    init_checkpoint: str = _field("", "Start from this warm-up checkpoint of an identical run.", study=True)
    init_weights: str = _field(
        "",
        "Start the model weights from this checkpoint of another run (weights only: fresh optimiser).",
        warmup=True,
    )
    train_images: int = _field(
        0, "Train on the captions of the first N images (0: all).", study=True, warmup=True
    )
    train_fraction: float = _field(
        1.0,
        "Train on this fraction of the train images, drawn at random with the run's seed (1: all).",
        study=True,
        warmup=True,
        cli=True,
    )
    shuffle_relevance: bool = _field(False, "Permute the loss's relevance vectors (a control).", study=True)
    word_dim: int = _field(300, "Word embedding size.", warmup=True, cli=True)
    embed_dim: int = _field(1024, "Joint embedding size.", warmup=True, cli=True)
    normalize_image: bool = _field(True, "L2-normalise image embeddings (False: VSE0).", warmup=True)
    concept_vectors: str = _field(
        "",
        "CVSE: GloVe text file or released *_glove_word2vec.pkl of the concepts ('': random).",
        warmup=True,
        cli=True,
    )
    finetune: bool = _field(False, "Fine-tune a CNN on the stored raw images.", warmup=True, cli=True)
    cnn: str = _field("resnet152", "CNN to fine-tune: small|resnet18|...|vgg19.", warmup=True, cli=True)
    cnn_weights: str | None = _field("IMAGENET1K_V1", "torchvision weights, or none.", warmup=True, cli=True)
    num_workers: int | None = _field(
        None,
        "Ray Train workers (DDP); 0: train in the command's own process, without Ray (no worker restart). "
        "Default: 0 on one machine's CPU, 1 with use_gpu or a cluster to join (--ray-address, RAY_ADDRESS, "
        "`ray start`).",
        "run",
        warmup=True,
        cli=True,
    )
    cpus_per_worker: float = _field(1.0, "CPUs reserved per worker.", "run", cli=True)
    placement_strategy: str = _field(
        "PACK",
        "Where workers go: PACK (fill a node) | SPREAD | STRICT_PACK | STRICT_SPREAD.",
        "run",
        cli=True,
    )
    use_gpu: bool = _field(False, "One GPU per worker (NCCL).", "run", cli=True)
    seed: int = _field(0, "Seed.", study=True, warmup=True, cli=True)
    output_dir: str = _field(
        DEFAULT_OUTPUT_DIR, "Folder of checkpoints and the default MLflow store.", "run", cli=True
    )
    storage_path: str | None = _field(None, "Ray Train storage (default: <output_dir>/ray_results).", "run")
    run_name: str | None = _field(None, "Stable run name (default: dataset-loss-seed).", "run", cli=True)
    tracking_uri: str | None = _field(
        None, "MLflow URI (default: sqlite in the output folder).", "run", cli=True
    )
    experiment: str | None = _field(None, "MLflow experiment (default: dataset name).", "run", cli=True)
    max_failures: int = _field(1, "Worker failures tolerated before giving up.", "run", cli=True)
    deviations: list[str] = _field(
        [], "Where this run differs from the official code (set by a recipe).", "run"
    )
    recipe: str = _field(
        "", "The recipe the run follows (set by a recipe): `evaluate --paper` scores as its paper.", "run"
    )
    val_every: int = _field(0, "Validate every N steps too (0: after each epoch only).", "evaluation")
    val_images: int = _field(0, "Validate on the first N images of the split (0: all).", "evaluation")
    eval_ks: tuple[int, ...] = _field((1, 5, 10), "R@K cut-offs.", "evaluation")
    cs_ks: tuple[int, ...] = _field((5, 10, 100, 1000), "CS@K cut-offs.", "evaluation")
    ncs_ks: tuple[int, ...] = _field((1, 5, 10, 25, 50), "NCS@K cut-offs.", "evaluation")
    eval_batch_size: int = _field(512, "Rows per encoding batch at evaluation.", "evaluation")

    def __post_init__(self) -> None:
        if isinstance(self.cnn_weights, str) and self.cnn_weights.lower() == "none":
            self.cnn_weights = None  # "--cnn-weights none", "cnn_weights: none": a random initialisation

    def validate(self) -> TrainConfig:
        """Raise ValueError naming the first invalid field; return self."""
        from vse_ray.features.cnn import CNN_NAMES
        from vse_ray.losses import make_loss
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
        positive_ints = ("epochs", "batch_size", "lr_update", "word_dim", "embed_dim")
        for name in (*positive_ints, "eval_batch_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name}: must be a positive integer, got {value!r}")
        if self.num_workers is not None and (type(self.num_workers) is not int or self.num_workers < 0):
            raise ValueError(
                f"num_workers: must be an integer >= 0 (0: in this process), got {self.num_workers!r}"
            )
        if not isinstance(self.warmup_epochs, int) or not 0 <= self.warmup_epochs <= self.epochs:
            raise ValueError(f"warmup_epochs: must be an integer in [0, epochs], got {self.warmup_epochs!r}")
        if type(self.train_images) is not int or self.train_images < 0:
            raise ValueError(f"train_images: must be an integer >= 0 (0 = all), got {self.train_images!r}")
        fraction = self.train_fraction
        if isinstance(fraction, bool) or not isinstance(fraction, int | float) or not 0 < fraction <= 1:
            raise ValueError(f"train_fraction: must be a number in (0, 1], got {fraction!r}")
        if self.concept_vectors and not Path(self.concept_vectors).is_file():
            raise ValueError(f"concept_vectors: no such file: {self.concept_vectors}")
        if self.init_checkpoint and not Path(self.init_checkpoint).exists():
            raise ValueError(f"init_checkpoint: no such file or folder: {self.init_checkpoint}")
        if self.init_weights and not Path(self.init_weights).exists():
            raise ValueError(f"init_weights: no such file or folder: {self.init_weights}")
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
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer: must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        if self.negatives not in NEGATIVES:
            raise ValueError(f"negatives: must be one of {NEGATIVES}, got {self.negatives!r}")
        if self.loss_span not in LOSS_SPANS:
            raise ValueError(f"loss_span: must be one of {LOSS_SPANS}, got {self.loss_span!r}")
        if self.loss_span == "local" and (self.loss, self.model, self.warmup_epochs) != (
            "infonce",
            "clip",
            0,
        ):
            raise ValueError(
                "loss_span: local needs loss infonce on model clip without warm-up epochs (open_clip's "
                f"local_loss), got loss {self.loss!r}, model {self.model!r}, "
                f"warmup_epochs {self.warmup_epochs}"
            )
        if self.warmup_loss not in LOSS_NAMES:
            raise ValueError(f"warmup_loss: must be one of {LOSS_NAMES}, got {self.warmup_loss!r}")
        for name in ("warmup_params", "lr_groups"):
            if not isinstance(getattr(self, name), dict):
                raise ValueError(f"{name}: must be a mapping, got {type(getattr(self, name)).__name__}")
        try:
            make_loss(self.warmup_loss, **self.warmup_params)
        except (TypeError, ValueError) as err:
            raise ValueError(f"warmup_params of {self.warmup_loss!r}: {err}") from err
        for prefix, factor in self.lr_groups.items():
            if not isinstance(factor, int | float) or not math.isfinite(factor) or factor < 0:
                raise ValueError(f"lr_groups.{prefix}: must be a finite multiplier >= 0, got {factor!r}")
        for name in ("weight_decay", "caption_mask", "caption_replace", "caption_delete"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{name}: must be a finite number >= 0, got {value!r}")
        if self.caption_mask + self.caption_replace + self.caption_delete > 1:
            raise ValueError("caption_mask + caption_replace + caption_delete: must be at most 1")
        if not isinstance(self.lr_factor, int | float) or not 0 < self.lr_factor <= 1:
            raise ValueError(f"lr_factor: must be in (0, 1], got {self.lr_factor!r}")
        if list(self.lr_milestones) != sorted(set(self.lr_milestones)) or any(
            not isinstance(m, int) or m < 1 for m in self.lr_milestones
        ):
            raise ValueError(f"lr_milestones: must be increasing positive epochs, got {self.lr_milestones!r}")
        self._validate_fine_tuning()
        for name in ("val_every", "val_images", "patience"):
            value = getattr(self, name)
            if type(value) is not int or value < 0:
                raise ValueError(f"{name}: must be an integer >= 0 (0 = off), got {value!r}")
        if self.finetune and self.cnn not in CNN_NAMES:
            raise ValueError(f"cnn: must be one of {CNN_NAMES}, got {self.cnn!r}")
        if not isinstance(self.deviations, list) or not all(isinstance(d, str) for d in self.deviations):
            raise ValueError(f"deviations: must be a list of strings, got {self.deviations!r}")
        if not isinstance(self.max_failures, int) or self.max_failures < -1:
            raise ValueError(f"max_failures: must be an integer >= -1, got {self.max_failures!r}")
        for name in CUTOFFS:
            ks = getattr(self, name)
            if not ks or any(not isinstance(k, int) or k < 1 for k in ks):
                raise ValueError(f"{name}: must be a non-empty tuple of positive integers, got {ks!r}")
        return self

    def _validate_fine_tuning(self) -> None:
        """The schedule, weight-decay, per-tower, locking and precision settings."""
        if self.lr_schedule not in LR_SCHEDULES:
            raise ValueError(f"lr_schedule: must be one of {LR_SCHEDULES}, got {self.lr_schedule!r}")
        if type(self.lr_warmup_steps) is not int or self.lr_warmup_steps < 0:
            raise ValueError(f"lr_warmup_steps: must be an integer >= 0, got {self.lr_warmup_steps!r}")
        if self.lr_warmup_steps and self.lr_schedule != "cosine":
            raise ValueError("lr_warmup_steps: needs lr_schedule cosine (step decays per epoch)")
        for name in ("weight_decay_exclude", "lock_image", "grad_checkpointing", "image_cache"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name}: must be true or false, got {getattr(self, name)!r}")
        for name in ("lr_image", "lr_text"):
            value = getattr(self, name)
            number = not isinstance(value, bool) and isinstance(value, int | float)
            if not number or not math.isfinite(value) or value < 0:
                raise ValueError(f"{name}: must be a finite multiplier >= 0, got {value!r}")
        decay = self.layer_decay
        if isinstance(decay, bool) or not isinstance(decay, int | float) or not 0 < decay <= 1:
            raise ValueError(f"layer_decay: must be a number in (0, 1], got {decay!r}")
        for name in ("lock_image_unlocked_groups", "freeze_image_epochs"):
            value = getattr(self, name)
            if type(value) is not int or value < 0:
                raise ValueError(f"{name}: must be an integer >= 0, got {value!r}")
        if self.lock_image_unlocked_groups and not self.lock_image:
            raise ValueError("lock_image_unlocked_groups: needs lock_image true")
        if self.freeze_image_epochs and self.lock_image and not self.lock_image_unlocked_groups:
            raise ValueError("freeze_image_epochs: the image tower is locked for every epoch (lock_image)")
        if self.freeze_image_epochs >= self.epochs:
            raise ValueError(
                f"freeze_image_epochs: must be below epochs ({self.epochs}), got {self.freeze_image_epochs}"
            )
        tower = {
            "lr_image": self.lr_image != 1,
            "lr_text": self.lr_text != 1,
            "layer_decay": self.layer_decay != 1,
            "lock_image": self.lock_image,
            "freeze_image_epochs": self.freeze_image_epochs > 0,
            "grad_checkpointing": self.grad_checkpointing,
            "image_cache": self.image_cache,
            "image_crop_scale": bool(self.image_crop_scale),
        }
        used = [name for name, on in tower.items() if on]
        if used and self.model != "clip":
            raise ValueError(f"{used[0]}: a setting of the clip model's towers, not of {self.model!r}")
        if self.image_crop_scale:
            self._validate_image_crop()
        if self.image_cache:
            self._validate_image_cache()
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision: must be one of {PRECISIONS}, got {self.precision!r}")
        if self.precision == "fp16" and not self.use_gpu:
            raise ValueError("precision: fp16 needs a GPU (use_gpu true); on the CPU use bf16 or fp32")

    def _validate_image_crop(self) -> None:
        scale = self.image_crop_scale
        numbers = all(not isinstance(v, bool) and isinstance(v, int | float) for v in scale)
        if len(scale) != 2 or not numbers or not 0 < scale[0] <= scale[1] <= 1:
            raise ValueError(
                f"image_crop_scale: expected [low, high] with 0 < low <= high <= 1, got {scale!r}"
            )
        if self.image_cache:
            raise ValueError(
                "image_crop_scale: the image cache holds one embedding per stored image, not one per crop "
                "drawn at each step; train from the pixels (image_cache false)"
            )

    def _validate_image_cache(self) -> None:
        """The cached embeddings stand for the image tower only when nothing of it trains or changes: locked
        whole, with the weights of `model_params`, reading the stored images as they are."""
        cached = "the cache holds the locked tower's embeddings of the stored images"
        if not self.lock_image:
            raise ValueError(f"image_cache: needs lock_image true ({cached})")
        if self.lock_image_unlocked_groups:
            raise ValueError(
                f"image_cache: the image tower's last {self.lock_image_unlocked_groups} layer groups train "
                f"(lock_image_unlocked_groups); {cached}"
            )
        if self.finetune:
            raise ValueError(f"image_cache: finetune trains a CNN on random crops of the images; {cached}")
        if self.init_weights:
            raise ValueError(
                f"image_cache: init_weights replaces the image tower's weights; {cached} by model_params"
            )
        if self.model_params.get("projection_head"):
            raise ValueError(
                "image_cache: model_params.projection_head trains a head on the tower's raw output; "
                f"{cached}, normalised"
            )

    def checked(self) -> CheckedConfig:
        """A validated copy (`validate()`): the value code downstream trusts without checking again."""
        return CheckedConfig(copy.deepcopy(self).validate())

    def resolved(self) -> TrainConfig:
        """A copy with absolute paths (Ray workers run elsewhere) and the derived names filled in."""
        from vse_ray.tracking.uri import resolve_tracking_uri

        out = Path(self.output_dir).expanduser().resolve()
        dataset = Path(self.data_dir).expanduser().resolve().name
        return dataclasses.replace(
            self,
            data_dir=str(Path(self.data_dir).expanduser().resolve()),
            init_weights=str(Path(self.init_weights).expanduser().resolve()) if self.init_weights else "",
            output_dir=str(out),
            storage_path=str(Path(self.storage_path).expanduser().resolve())
            if self.storage_path
            else str(out / "ray_results"),
            run_name=self.run_name or f"{dataset}-{self.loss}-s{self.seed}",
            tracking_uri=resolve_tracking_uri(self.tracking_uri, out),
            experiment=self.experiment or dataset,
        )

    def workers(self, ray_address: str | None = None) -> int:
        """``num_workers``, or where the default trains: in this process (0) on one machine's CPU, where Ray
        Train's start would be most of a short run's fixed cost; one Ray Train worker (1) with a GPU or a
        cluster to join (``ray_address``, ``RAY_ADDRESS``, this machine's ``ray start``)."""
        from vse_ray.ray_address import cluster_address

        if self.num_workers is not None:
            return self.num_workers
        return 1 if self.use_gpu or cluster_address(ray_address) else 0

    def filled(self, name: str) -> str:
        """The value of `name`, a field that resolving fills in (storage_path, run_name, tracking_uri,
        experiment); ValueError naming it in a config not yet resolved."""
        value = getattr(self, name)
        if not isinstance(value, str):
            raise ValueError(f"{name}: not set; resolve the config first (TrainConfig.checked().resolved())")
        return value

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
            if key == "deviations":
                flat[key] = len(value)  # the text goes to deviations.md (an MLflow param holds 6,000 chars)
            elif key in _FLAT_PREFIX:
                flat.update({f"{_FLAT_PREFIX[key]}.{k}": _scalar(v) for k, v in sorted(value.items())})
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
                cast = float if name in _FLOAT_TUPLES else int
                kwargs[name] = tuple(cast(k) for k in kwargs[name])
        return cls(**kwargs)


@dataclass(frozen=True)
class CheckedConfig:
    """A TrainConfig whose fields passed `validate()` once, at the boundary (`TrainConfig.checked()`).

    Code that takes a CheckedConfig trusts it and does not validate again; a changed field is a new
    TrainConfig, checked again. `config` is not to be modified in place.
    """

    config: TrainConfig

    def resolved(self) -> CheckedConfig:
        """The config with absolute paths and derived names (`TrainConfig.resolved`): still valid."""
        return CheckedConfig(self.config.resolved())

    def placed(self, ray_address: str | None = None) -> CheckedConfig:
        """The config with its default ``num_workers`` decided (`TrainConfig.workers`): still valid."""
        return CheckedConfig(dataclasses.replace(self.config, num_workers=self.config.workers(ray_address)))

    def renamed(self, run_name: str | None) -> CheckedConfig:
        """The same config under another run name (no field check reads the name)."""
        return CheckedConfig(dataclasses.replace(self.config, run_name=run_name))

    def to_dict(self) -> dict[str, Any]:
        """The config as `TrainConfig.to_dict` writes it (what a Ray worker receives)."""
        return self.config.to_dict()

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CheckedConfig:
        """A config written by `to_dict` of a CheckedConfig: checked where it was written (the driver)."""
        return cls(TrainConfig.from_dict(d))


_FLAT_PREFIX = {
    "loss_params": "loss",
    "model_params": "model",
    "warmup_params": "warmup",
    "lr_groups": "lr_group",
}


def fields_where(
    role: str | None = None,
    *,
    study: bool | None = None,
    warmup: bool | None = None,
    cli: bool | None = None,
) -> tuple[str, ...]:
    """Names of the TrainConfig fields whose metadata matches every given criterion, in declaration order."""
    return tuple(
        f.name
        for f in dataclasses.fields(TrainConfig)
        if (role is None or f.metadata["role"] == role)
        and (study is None or f.metadata["study"] == study)
        and (warmup is None or f.metadata["warmup"] == warmup)
        and (cli is None or f.metadata["cli"] == cli)
    )


def parse_override(item: str, option: str = "--set") -> tuple[str, Any]:
    """``"loss_params.margin=0.1"`` → ``("loss_params.margin", 0.1)``: the one parser of ``KEY=VALUE``
    overrides (``train --set``, ``--param`` as ``loss_params.KEY``, ``sweep --set``, ``study --set``). The
    value is YAML (so JSON too); what a dotted key means is the caller's; ValueError in one line naming
    `option`."""
    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"{option} {item!r}: expected KEY=VALUE")
    try:
        return key.strip(), yaml.safe_load(raw)
    except yaml.YAMLError as err:
        raise ValueError(f"{option} {item!r}: value is not YAML ({str(err).splitlines()[0]})") from err


def parse_overrides(items: list[str], option: str = "--set") -> dict[str, Any]:
    """``["epochs=2", "loss_params.margin=0.1"]`` → ``{"epochs": 2, "loss_params": {"margin": 0.1}}``:
    TrainConfig fields, a dotted key setting one entry of a dict field (NESTED)."""
    out: dict[str, Any] = {}
    for item in items:
        key, value = parse_override(item, option)
        head, _, sub = key.partition(".")
        if sub and head not in NESTED:
            raise ValueError(f"{option} {item!r}: only {NESTED} take dotted keys")
        if sub:
            out.setdefault(head, {})[sub] = value
        else:
            out[head] = value
    return out


def merge_overrides(fields: dict[str, Any], items: list[str], option: str = "--set") -> dict[str, Any]:
    """TrainConfig fields with ``KEY=VALUE`` overrides; dotted keys update one entry of a dict field."""
    merged = dict(fields)
    for key, value in parse_overrides(items, option).items():
        nested = key in NESTED and isinstance(value, dict)
        merged[key] = {**(merged.get(key) or {}), **value} if nested else value
    return merged


def _scalar(value: Any) -> str | int | float | bool:
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    if value is None:
        return "None"
    return value
