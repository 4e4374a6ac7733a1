"""vse_ray.tune: search spaces (tune_spaces/*.yaml), Ray Tune sweeps tracked in MLflow, run tables."""

from vse_ray.lazy_exports import lazy_exports

_EXPORTS = {
    "MLflowTrialsCallback": "vse_ray.tune.mlflow_trials",
    "fetch_runs": "vse_ray.tune.runs_table",
    "runs_table": "vse_ray.tune.runs_table",
    "SearchSpace": "vse_ray.tune.search_space",
    "load_search_space": "vse_ray.tune.search_space",
    "parse_search_space": "vse_ray.tune.search_space",
    "check_search_space": "vse_ray.tune.space_checks",
    "trial_config": "vse_ray.tune.space_checks",
    "SweepResult": "vse_ray.tune.sweep_report",
    "run_sweep": "vse_ray.tune.sweep",
    "SweepConfig": "vse_ray.tune.sweep_config",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
