"""Names of the MLflow tags and param/metric prefixes that link sweep, study and trial runs (no imports)."""

PARENT_TAG = "mlflow.parentRunId"
TRIAL_TAG = "vse_ray.trial_id"
STOP_TAG = "vse_ray.stop_reason"
RECIPE_TAG = "vse_ray.recipe"  # the recipe whose paper numbers an evaluation logged beside the run's
SWEEP_PARAM = "sweep."  # the parent run's own params (space, scheduler, ...)
BEST_PARAM = "best."  # the parent run's copy of its best trial's params (tags: a resume may change it)
BEST_METRIC = "best_"  # ... and of that trial's metrics at its best epoch
