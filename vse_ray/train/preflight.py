"""Checks that run before anything starts (no Ray, no MLflow): a bad value fails in about a second."""

from __future__ import annotations

from vse_ray.data.verify import VerifiedData, verify_data_dir
from vse_ray.train.config import TrainConfig


def check_training(cfg: TrainConfig) -> VerifiedData:
    """Validate a training before Ray or MLflow start: every field, the loss and its hyper-parameters
    (``make_loss``), and the data folder against its manifest (finished precompute, row counts, checksums).

    Returns:
        The verified data folder (its ``mlflow_params()`` go on the run).

    Raises:
        ValueError: Naming the field, hyper-parameter, folder or file and what was expected.
    """
    cfg.validate()
    return verify_data_dir(cfg.data_dir, splits=("train", "val"))
