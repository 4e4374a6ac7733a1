"""vse_ray: visual-semantic embeddings with graded relevance, trained and evaluated on Ray."""

import os

# Offline by default: MLflow sends usage telemetry from `import mlflow` on, and Ray its usage stats from a
# local instance. Both stay off unless the user sets these variables (the Ray workers inherit them).
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

__version__ = "0.1.0"
