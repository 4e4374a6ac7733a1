"""vse_ray.models: retrieval models by name (`build_model`) and their image and caption encoders.

The exports that import torch load on first use, so that the command-line help reads the model names
(`names`) without it.
"""

from vse_ray.lazy_exports import lazy_exports

_LAZY = {
    "DEFAULT_MODEL": "vse_ray.models.names",
    "MODELS": "vse_ray.models.registry",
    "MODEL_NAMES": "vse_ray.models.names",
    "CNNImageEncoder": "vse_ray.models.image_encoder",
    "GRUTextEncoder": "vse_ray.models.text_encoder",
    "ImageProjection": "vse_ray.models.image_encoder",
    "RetrievalModel": "vse_ray.models.base",
    "VSEModel": "vse_ray.models.vse",
    "build_model": "vse_ray.models.registry",
    "model_class": "vse_ray.models.registry",
    "model_options": "vse_ray.models.registry",
    "rebuild_model": "vse_ray.models.registry",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
__all__ = sorted(_LAZY)
