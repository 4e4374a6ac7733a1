"""Artifacts of a finished training: resolved config, metrics JSON, best checkpoint, plots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mlflow import MlflowClient
from mlflow.entities import Metric

from vse_ray.evaluation.plots import plot_metric_at_k, plot_relevance_histogram, plot_training_curves
from vse_ray.tracking.artifacts import log_figures, log_json
from vse_ray.tracking.checkpoint import CHECKPOINT_FILE
from vse_ray.tracking.relevance_histogram import RelevanceHistogram
from vse_ray.tracking.runs import CHECKPOINT_ARTIFACT_DIR
from vse_ray.train.config import TrainConfig


def log_training_artifacts(
    cfg: TrainConfig, run_id: str, best_dir: Path, latest: dict[str, Any], best_metrics: dict[str, Any]
) -> None:
    """Log config.json, deviations.md (a recipe's), metrics.json, checkpoint/model.pt (best by rsum), `best_*`
    summary metrics, plots."""
    client = MlflowClient(cfg.tracking_uri)
    log_json(client, run_id, cfg.to_dict(), "config.json")
    if cfg.deviations:
        text = "# Deviations from the official code\n\n" + "".join(f"- {d}\n" for d in cfg.deviations)
        client.log_text(run_id, text, "deviations.md")
    log_json(client, run_id, {"best": best_metrics, "history": latest["history"]}, "metrics.json")
    client.log_artifact(run_id, str(best_dir / CHECKPOINT_FILE), CHECKPOINT_ARTIFACT_DIR)
    client.log_batch(
        run_id,
        metrics=[
            Metric("best_rsum", float(best_metrics["rsum"]), 0, 0),
            Metric("best_epoch", float(best_metrics["epoch"]), 0, 0),
        ],
    )
    figures = {
        "training_curves": plot_training_curves(latest["history"]),
        "val_cs_at_k": plot_metric_at_k(best_metrics, "CS", "Coherent Score CS@K (val, best epoch)"),
        "val_ncs_at_k": plot_metric_at_k(best_metrics, "NCS", "NCS@K (val, best epoch)"),
    }
    if latest.get("relevance_hist"):
        hist = RelevanceHistogram.from_dict(latest["relevance_hist"])
        figures["batch_relevance_histogram"] = plot_relevance_histogram(hist)
    log_figures(client, run_id, figures, "plots")
