"""vse_ray.train: the plain-PyTorch epoch loop and its Ray Train driver (see `trainer.fit`)."""

from vse_ray.lazy_exports import lazy_exports

_EXPORTS = {
    "TrainConfig": "vse_ray.train.config",
    "NonFiniteLossError": "vse_ray.train.epoch_loop",
    "WorkerContext": "vse_ray.train.epoch_loop",
    "run_training": "vse_ray.train.epoch_loop",
    "RayTrainReporter": "vse_ray.train.reporter",
    "Reporter": "vse_ray.train.reporter",
    "TuneReporter": "vse_ray.train.reporter",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
