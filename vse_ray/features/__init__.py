"""vse_ray.features: the image backbones (CNNs) and their features (1 centre crop or 10-crop mean) for Ray
Data actor pools; the models fine-tune the same backbones. Names load on first use: a check or a model that
needs no torchvision backbone does not import it."""

from vse_ray.lazy_exports import lazy_exports

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "CNN_NAMES": "vse_ray.features.cnn",
        "build_cnn": "vse_ray.features.cnn",
        "crop_batch": "vse_ray.features.crops",
        "CNNFeatureExtractor": "vse_ray.features.extractor",
        "build_frozen_cnn": "vse_ray.features.extractor",
        "check_weights": "vse_ray.features.weights",
    },
)
__all__ = ["CNN_NAMES", "CNNFeatureExtractor", "build_cnn", "build_frozen_cnn", "check_weights", "crop_batch"]
