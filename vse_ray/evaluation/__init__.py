"""vse_ray.evaluation: score trained runs on a split, JSON reports, plots and retrieval examples.

The exports load on first use, so the Ray-free training loop (which scores validation through
`vse_ray.evaluation.embed`) imports neither MLflow nor Ray."""

from vse_ray.lazy_exports import lazy_exports

_EXPORTS = {
    "PROTOCOLS": "vse_ray.evaluation.evaluate",
    "EvaluationReport": "vse_ray.evaluation.evaluate",
    "evaluate_run": "vse_ray.evaluation.evaluate",
    "evaluate_sims": "vse_ray.evaluation.sims_file",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
