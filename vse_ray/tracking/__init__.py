"""vse_ray.tracking: MLflow runs, params, metrics and artifacts (driver side or rank 0 only)."""

from vse_ray.lazy_exports import lazy_exports

_EXPORTS = {
    "get_best_checkpoint": "vse_ray.tracking.runs",
    "get_best_run": "vse_ray.tracking.runs",
    "get_or_create_experiment": "vse_ray.tracking.runs",
    "get_or_create_run": "vse_ray.tracking.runs",
    "log_epoch_metrics": "vse_ray.tracking.recorder",
    "log_params_flat": "vse_ray.tracking.recorder",
    "RunRecorder": "vse_ray.tracking.recorder",
    "resolve_tracking_uri": "vse_ray.tracking.uri",
    "runs_table_url": "vse_ray.tracking.uri",
    "ui_command": "vse_ray.tracking.uri",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
