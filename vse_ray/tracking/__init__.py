"""vse_ray.tracking: MLflow runs, params, metrics and artifacts (driver side or rank 0 only)."""

from vse_ray.tracking.runs import (
    get_best_checkpoint,
    get_best_run,
    get_or_create_experiment,
    get_or_create_run,
    log_epoch_metrics,
    log_params_flat,
)
from vse_ray.tracking.uri import resolve_tracking_uri, runs_table_url, ui_command

__all__ = [
    "get_best_checkpoint",
    "get_best_run",
    "get_or_create_experiment",
    "get_or_create_run",
    "log_epoch_metrics",
    "log_params_flat",
    "resolve_tracking_uri",
    "runs_table_url",
    "ui_command",
]
