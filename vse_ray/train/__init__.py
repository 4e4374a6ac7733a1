"""vse_ray.train: the plain-PyTorch epoch loop and its Ray Train driver (see `trainer.fit`)."""

from vse_ray.train.config import TrainConfig
from vse_ray.train.engine import NonFiniteLossError, WorkerContext, run_training
from vse_ray.train.reporter import LocalReporter, RayTrainReporter, Reporter, TuneReporter

__all__ = [
    "LocalReporter",
    "NonFiniteLossError",
    "RayTrainReporter",
    "Reporter",
    "TrainConfig",
    "TuneReporter",
    "WorkerContext",
    "run_training",
]
