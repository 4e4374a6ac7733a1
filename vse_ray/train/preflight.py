"""Checks that run before anything starts (no Ray, no MLflow): a bad value fails in about a second."""

from __future__ import annotations

from vse_ray.data.verify import VerifiedData, verify_data_dir
from vse_ray.features import check_weights
from vse_ray.folder_names import check_folder_name
from vse_ray.models import model_class
from vse_ray.tracking.filters import quote_value
from vse_ray.train.config import TrainConfig
from vse_ray.train.model_input import check_data_for_model


def check_training(cfg: TrainConfig) -> VerifiedData:
    """Validate a training before Ray or MLflow start: every field, the loss and its hyper-parameters
    (``make_loss``), the data folder against its manifest (finished precompute, row counts, checksums),
    that the folder holds the image input the model reads (pooled, regions or pixels), and that pretrained
    weights or files the model needs (VSE∞'s BERT, CVSE's concepts) are there.

    Returns:
        The verified data folder (its ``mlflow_params()`` go on the run).

    Raises:
        ValueError: Naming the field, hyper-parameter, folder or file and what was expected.
        FileNotFoundError: Pretrained weights missing, saying how to provide them.
    """
    cfg.validate()
    if cfg.finetune:
        check_weights(cfg.cnn, cfg.cnn_weights)  # before Ray: no download at run time
    if cfg.run_name is not None:
        check_folder_name(cfg.run_name, "run_name")  # Ray Train's folder under storage_path
        quote_value(cfg.run_name, "run_name")  # and a value of MLflow filters
    verified = verify_data_dir(cfg.data_dir, splits=("train", "val"))
    check_data_for_model(cfg.data_dir, cfg.model, cfg.finetune)
    cls = model_class(cfg.model)
    cls.check_pretrained(**{**{name: getattr(cfg, name) for name in cls.config_fields}, **cfg.model_params})
    return verified
