"""vse_ray.models: image and caption encoders into one joint embedding space (VSE++ Sec. 2.2)."""

from vse_ray.models.cnn import CNN_NAMES, build_cnn
from vse_ray.models.image_encoder import CNNImageEncoder, ImageProjection
from vse_ray.models.text_encoder import GRUTextEncoder
from vse_ray.models.vse import VSEModel

__all__ = ["CNN_NAMES", "CNNImageEncoder", "GRUTextEncoder", "ImageProjection", "VSEModel", "build_cnn"]
