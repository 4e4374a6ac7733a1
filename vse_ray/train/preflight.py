"""Checks that run before anything starts (no Ray, no MLflow): a bad value fails in about a second."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from vse_ray.data.store.verify import VerifiedData, verify_data_dir
from vse_ray.features import check_weights
from vse_ray.folder_names import check_folder_name
from vse_ray.models import model_class
from vse_ray.tracking.filters import quote_value
from vse_ray.train.config import CheckedConfig, TrainConfig
from vse_ray.train.locked_image import check_cache_input
from vse_ray.train.model_factory import check_model_data, constructor_params
from vse_ray.train.model_input import check_data_for_model, check_stored_images, reads_pixels


@dataclass(frozen=True)
class CheckedTraining:
    """A training checked once by `check_training`: `fit` and the code below it trust it."""

    checked: CheckedConfig  # resolved: absolute paths, derived run name, tracking URI and experiment
    data: VerifiedData

    @property
    def config(self) -> TrainConfig:
        return self.checked.config

    def renamed(self, run_name: str | None) -> CheckedTraining:
        """The same training under another run name (a new run beside one with another config)."""
        _check_run_name(run_name)
        return dataclasses.replace(self, checked=self.checked.renamed(run_name))


def check_training(valid: CheckedConfig, ray_address: str | None = None) -> CheckedTraining:
    """Check a training once, before Ray or MLflow start, on a config whose fields were checked where it was
    made (`TrainConfig.checked()`, or a recipe): the data folder against its manifest (finished precompute,
    row counts, checksums), that the folder holds the image input the model reads (pooled, regions or
    pixels, or the stored images a missing image cache is computed from), that a batch fits in the train
    split, and that pretrained weights or
    files the model needs (VSE∞'s BERT, CVSE's concepts) are there.

    Returns:
        The resolved config, its default ``num_workers`` decided (``ray_address``: the cluster the command
        is told to join; `TrainConfig.workers`), and the verified data folder (its ``mlflow_params()`` go on
        the run).

    Raises:
        ValueError: Naming the field, hyper-parameter, folder or file and what was expected.
        FileNotFoundError: Pretrained weights missing, saying how to provide them.
    """
    cfg = valid.config
    if cfg.finetune:
        check_weights(cfg.cnn, cfg.cnn_weights)  # before Ray: no download at run time
    if cfg.run_name is not None:
        _check_run_name(cfg.run_name)
    verified = verify_data_dir(cfg.data_dir, splits=("train", "val"))
    verified.check_cutoffs("val", cfg.eval_ks)  # each epoch ranks the val images
    check_data_for_model(cfg.data_dir, cfg.model, reads_pixels(cfg), cfg.model_params)
    check_stored_images(cfg)
    _check_batch(cfg, verified)
    if cfg.image_cache:
        check_cache_input(cfg)  # the stored images of a split whose tower embeddings are not cached yet
    check_model_files(cfg)
    check_model_data(cfg)
    checked = valid.placed(ray_address).resolved()  # after the checks: resolving creates the output folder
    if cfg.run_name is None:
        _check_run_name(checked.config.run_name)  # the derived name (dataset-loss-seed)
    return CheckedTraining(checked, verified)


def check_model_files(cfg: TrainConfig) -> None:
    """The pretrained weights and files ``cfg.model`` reads are there and fit it (FileNotFoundError or
    ValueError in one line, saying how to provide them)."""
    cls = model_class(cfg.model)
    cls.check_pretrained(
        **{name: getattr(cfg, name) for name in cls.config_fields}, **constructor_params(cfg)
    )


def _check_batch(cfg: TrainConfig, data: VerifiedData) -> None:
    """A worker's batch fits in its share of the train captions (the epoch's last partial batch is
    dropped: a larger batch trains nothing)."""
    workers = cfg.num_workers or 1  # 0 (in this process) and none (the default's choice) train one
    rows = data.captions.get("train", 0) // workers
    if cfg.batch_size > rows:
        each = f" for each of {workers} workers (lower num_workers or batch_size)" if workers > 1 else ""
        raise ValueError(
            f"batch_size {cfg.batch_size} exceeds the {rows} train captions of {data.path}{each}"
        )


def _check_run_name(run_name: str | None) -> None:
    name = check_folder_name(run_name, "run_name")  # Ray Train's folder under storage_path
    quote_value(name, "run_name")  # and a value of MLflow filters
