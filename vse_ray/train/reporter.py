"""Where the epoch loop sends its per-epoch metrics and checkpoint: Ray Train or Ray Tune."""

from __future__ import annotations

from typing import Any, Protocol


class Reporter(Protocol):
    """Called once per epoch by every worker; `checkpoint_dir` is None except on rank 0."""

    def report(self, metrics: dict[str, Any], checkpoint_dir: str | None) -> None: ...


class RayTrainReporter:  # pragma: no cover, runs inside Ray Train workers (covered by the integration tests)
    """`ray.train.report` with a directory checkpoint (the driver logs the reported epoch to MLflow)."""

    def report(self, metrics: dict[str, Any], checkpoint_dir: str | None) -> None:
        import ray.train

        checkpoint = ray.train.Checkpoint.from_directory(checkpoint_dir) if checkpoint_dir else None
        ray.train.report(metrics, checkpoint=checkpoint)


class TuneReporter:  # pragma: no cover, runs inside Ray Tune trials
    """`ray.tune.report` for single-process Tune trials that call `run_training` directly."""

    def report(self, metrics: dict[str, Any], checkpoint_dir: str | None) -> None:
        import ray.tune

        checkpoint = ray.tune.Checkpoint.from_directory(checkpoint_dir) if checkpoint_dir else None
        ray.tune.report(metrics, checkpoint=checkpoint)
