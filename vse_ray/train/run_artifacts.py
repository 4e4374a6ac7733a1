"""Plots of a finished training: training curves, validation CS@K and NCS@K, batch relevance histogram."""

from __future__ import annotations

from typing import Any

from vse_ray.evaluation.plots import plot_metric_at_k, plot_relevance_histogram, plot_training_curves
from vse_ray.relevance.histogram import RelevanceHistogram
from vse_ray.tracking.artifacts import log_figures
from vse_ray.tracking.recorder import RunRecorder


def log_training_plots(recorder: RunRecorder, latest: dict[str, Any], best_metrics: dict[str, Any]) -> None:
    """The run's `plots/`: curves of `latest["history"]`, CS@K and NCS@K of the best epoch, and the
    histogram of batch relevance when the run kept one."""
    figures = {
        "training_curves": plot_training_curves(latest["history"]),
        "val_cs_at_k": plot_metric_at_k(best_metrics, "CS", "Coherent Score CS@K (val, best epoch)"),
        "val_ncs_at_k": plot_metric_at_k(best_metrics, "NCS", "NCS@K (val, best epoch)"),
    }
    if latest.get("relevance_hist"):
        hist = RelevanceHistogram.from_dict(latest["relevance_hist"])
        figures["batch_relevance_histogram"] = plot_relevance_histogram(hist)
    log_figures(recorder.client, recorder.run_id, figures, "plots")
