"""vse_ray.data: the embedded synthetic dataset, dataset readers and the Ray Data precompute stage.

The package import stays light (no torch, no Arrow) because Ray Data tasks and the `vse-ray` options import
it; the stage itself is :func:`vse_ray.data.precompute.precompute`.
"""

from vse_ray.lazy_exports import lazy_exports

_EXPORTS = {
    "ExecutionOptions": "vse_ray.data.config",
    "PrecomputeConfig": "vse_ray.data.config",
    "SyntheticDataset": "vse_ray.data.synthetic",
    "generate_synthetic": "vse_ray.data.synthetic",
    "load_captions": "vse_ray.data.store",
    "load_features": "vse_ray.data.store",
    "load_manifest": "vse_ray.data.store",
    "load_relevance": "vse_ray.data.store",
    "load_vocab": "vse_ray.data.store",
    "render_scene": "vse_ray.data.synthetic",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
