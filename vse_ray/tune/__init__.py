"""vse_ray.tune: search spaces (tune_spaces/*.yaml), Ray Tune sweeps tracked in MLflow, run tables."""

from vse_ray.tune.mlflow_trials import MLflowTrialsCallback
from vse_ray.tune.runs_table import fetch_runs, runs_table
from vse_ray.tune.search_space import SearchSpace, load_search_space, parse_search_space
from vse_ray.tune.space_checks import check_search_space, trial_config
from vse_ray.tune.sweep import SweepResult, run_sweep
from vse_ray.tune.sweep_config import SweepConfig

__all__ = [
    "MLflowTrialsCallback",
    "SearchSpace",
    "SweepConfig",
    "SweepResult",
    "check_search_space",
    "fetch_runs",
    "load_search_space",
    "parse_search_space",
    "run_sweep",
    "runs_table",
    "trial_config",
]
