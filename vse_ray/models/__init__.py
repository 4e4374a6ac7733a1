"""vse_ray.models: retrieval models by name (`build_model`) and their image and caption encoders."""

from vse_ray.models.base import RetrievalModel
from vse_ray.models.image_encoder import CNNImageEncoder, ImageProjection
from vse_ray.models.registry import (
    DEFAULT_MODEL,
    MODEL_NAMES,
    MODELS,
    build_model,
    model_class,
    model_options,
    rebuild_model,
)
from vse_ray.models.text_encoder import GRUTextEncoder
from vse_ray.models.vse import VSEModel

__all__ = [
    "DEFAULT_MODEL",
    "MODELS",
    "MODEL_NAMES",
    "CNNImageEncoder",
    "GRUTextEncoder",
    "ImageProjection",
    "RetrievalModel",
    "VSEModel",
    "build_model",
    "model_class",
    "model_options",
    "rebuild_model",
]
