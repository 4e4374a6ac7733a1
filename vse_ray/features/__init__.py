"""vse_ray.features: CNN image features (1 centre crop or 10-crop mean) for Ray Data actor pools."""

from vse_ray.features.crops import crop_batch
from vse_ray.features.extractor import CNNFeatureExtractor, build_frozen_cnn, check_weights

__all__ = ["CNNFeatureExtractor", "build_frozen_cnn", "check_weights", "crop_batch"]
