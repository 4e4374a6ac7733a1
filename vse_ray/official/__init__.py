"""vse_ray.official: checkpoints of the authors' released code, converted into vse_ray checkpoints."""

from vse_ray.official.vse_infty import import_vse_infty

FORMATS = {"vse_infty_bigru": import_vse_infty}

__all__ = ["FORMATS", "import_vse_infty"]
