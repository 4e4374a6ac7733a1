"""vse_ray.official: checkpoints of the authors' released code, converted into vse_ray checkpoints."""

from vse_ray.official.formats import FORMATS
from vse_ray.official.released import ReleasedFormat, ReleasedModel, read_released

__all__ = ["FORMATS", "ReleasedFormat", "ReleasedModel", "read_released"]
