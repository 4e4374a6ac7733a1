"""vse_ray.features: the image backbones (CNNs) and their features (1 centre crop or 10-crop mean) for Ray
Data actor pools; the models fine-tune the same backbones."""

from vse_ray.features.cnn import CNN_NAMES, build_cnn
from vse_ray.features.crops import crop_batch
from vse_ray.features.extractor import CNNFeatureExtractor, build_frozen_cnn, check_weights

__all__ = ["CNN_NAMES", "CNNFeatureExtractor", "build_cnn", "build_frozen_cnn", "check_weights", "crop_batch"]
