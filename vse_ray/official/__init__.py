"""vse_ray.official: checkpoints of the authors' released code, converted into vse_ray checkpoints."""

from vse_ray.official.formats import FORMATS
from vse_ray.official.released import ReleasedFormat, import_released

__all__ = ["FORMATS", "ReleasedFormat", "import_released"]
