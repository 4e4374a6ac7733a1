"""Finding MLflow runs: experiments and runs by name (created when missing), the best run, its checkpoint."""

from __future__ import annotations

from pathlib import Path

import mlflow
from mlflow import MlflowClient
from mlflow.entities import Run

from vse_ray.tracking.filters import tag_equals
from vse_ray.tracking.metric_keys import VAL_RSUM

RUN_NAME_TAG = "vse_ray.run_name"
CHECKPOINT_ARTIFACT_DIR = "checkpoint"
ARTIFACT_DIR = "mlartifacts"
_BATCH = 100


def _client(tracking_uri: str | None) -> MlflowClient:
    return MlflowClient(tracking_uri or mlflow.get_tracking_uri())


def artifact_root(output_dir: str | Path) -> str:
    """`file://` URI of `<output_dir>/mlartifacts`, where the runs of a local store keep their artifacts."""
    return (Path(output_dir).expanduser().resolve() / ARTIFACT_DIR).as_uri()


def get_or_create_experiment(name: str, tracking_uri: str | None, output_dir: str | Path) -> str:
    """Id of the experiment called `name`, created when missing.

    A new experiment of a local store (sqlite, file) keeps its artifacts under `<output_dir>/mlartifacts`;
    without it MLflow puts them in `./mlruns` of the current folder. A tracking server (http[s]://) chooses
    its own artifact store (`mlflow server --artifacts-destination`).
    """
    client = _client(tracking_uri)
    found = client.get_experiment_by_name(name)
    if found is not None:
        return found.experiment_id
    remote = (tracking_uri or mlflow.get_tracking_uri()).startswith(("http://", "https://", "databricks"))
    return client.create_experiment(name, artifact_location=None if remote else artifact_root(output_dir))


def get_or_create_run(experiment_id: str, run_name: str, tracking_uri: str | None = None) -> str:
    """The run tagged with this stable `run_name` (an interrupted training continues it), else a new one."""
    client = _client(tracking_uri)
    query = tag_equals(RUN_NAME_TAG, run_name, "run_name")
    runs = client.search_runs(
        [experiment_id], filter_string=query, max_results=1, order_by=["start_time DESC"]
    )
    if runs:
        client.update_run(runs[0].info.run_id, status="RUNNING")
        return runs[0].info.run_id
    run = client.create_run(experiment_id, run_name=run_name, tags={RUN_NAME_TAG: run_name})
    return run.info.run_id


def get_best_run(experiment: str, metric: str = VAL_RSUM, tracking_uri: str | None = None) -> Run:
    """The run of `experiment` (name or id) with the highest `metric` (its last logged value)."""
    client = _client(tracking_uri)
    found = client.get_experiment_by_name(experiment) or client.get_experiment(experiment)
    runs = client.search_runs(
        [found.experiment_id],
        filter_string=f"metrics.`{metric}` > -1e30",
        order_by=[f"metrics.`{metric}` DESC"],
    )
    if not runs:
        raise ValueError(f"experiment {experiment!r}: no run has metric {metric!r}")
    return runs[0]


def get_best_checkpoint(run_id: str, tracking_uri: str | None = None, dst: str | Path | None = None) -> Path:
    """Download the run's best checkpoint artifact; returns the local checkpoint directory."""
    path = mlflow.artifacts.download_artifacts(
        run_id=run_id,
        artifact_path=CHECKPOINT_ARTIFACT_DIR,
        dst_path=None if dst is None else str(dst),
        tracking_uri=tracking_uri or mlflow.get_tracking_uri(),
    )
    return Path(path)
