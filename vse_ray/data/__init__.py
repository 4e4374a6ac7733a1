"""vse_ray.data: the embedded synthetic dataset, dataset readers and the Ray Data precompute stage.

The package import stays light (no torch, no Arrow) because Ray Data tasks and the `vse-ray` options import
it; the stage itself is :func:`vse_ray.data.precompute.run.precompute`.
"""

from vse_ray.lazy_exports import lazy_exports

_EXPORTS = {
    "ExecutionOptions": "vse_ray.data.precompute.config",
    "PrecomputeConfig": "vse_ray.data.precompute.config",
    "SyntheticDataset": "vse_ray.data.synthetic.dataset",
    "generate_synthetic": "vse_ray.data.synthetic.dataset",
    "load_captions": "vse_ray.data.store.readers",
    "load_features": "vse_ray.data.store.readers",
    "load_manifest": "vse_ray.data.store.readers",
    "load_relevance": "vse_ray.data.store.readers",
    "load_vocab": "vse_ray.data.store.readers",
    "render_scene": "vse_ray.data.synthetic.dataset",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
