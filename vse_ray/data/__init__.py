"""vse_ray.data: the embedded synthetic dataset, dataset readers and the Ray Data precompute stage.

The package import stays light (no torch) because Ray Data tasks import it; the stage itself is
:func:`vse_ray.data.precompute.precompute`.
"""

from vse_ray.data.config import ExecutionOptions, PrecomputeConfig
from vse_ray.data.store import load_captions, load_features, load_manifest, load_relevance, load_vocab
from vse_ray.data.synthetic import SyntheticDataset, generate_synthetic, render_scene

__all__ = [
    "ExecutionOptions",
    "PrecomputeConfig",
    "SyntheticDataset",
    "generate_synthetic",
    "load_captions",
    "load_features",
    "load_manifest",
    "load_relevance",
    "load_vocab",
    "render_scene",
]
