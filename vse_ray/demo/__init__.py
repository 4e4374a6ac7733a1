"""vse_ray.demo: the study protocol at laptop scale on the embedded dataset (`vse-ray demo`)."""

from vse_ray.lazy_exports import lazy_exports

_EXPORTS = {
    "demo_study": "vse_ray.demo.run",
    "run_demo": "vse_ray.demo.run",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
