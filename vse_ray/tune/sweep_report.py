"""A sweep's last screen (status, best trial, headline metrics, where to look) and its JSON report."""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import TYPE_CHECKING, Any

from vse_ray.metrics.registry import BY_DIRECTION
from vse_ray.reporting.metric_columns import DIRECTIONS, metric_column, metric_number
from vse_ray.reporting.table import Column, format_cell, render_table
from vse_ray.tracking.uri import ui_command

if TYPE_CHECKING:
    from vse_ray.tune.search_space import SearchSpace

HEADLINE_METRICS = BY_DIRECTION  # as the metrics declare them: R@1/5/10, CS@100/1000, NCS@10


@dataclasses.dataclass
class SweepResult:
    """Outcome of one ``run_sweep`` call.

    Attributes:
        name: the sweep name (Tune folder and MLflow parent run name).
        path: the Tune experiment folder (pass it back through ``run_sweep`` to resume).
        finished: every trial ended (False when the run stopped early; rerun to resume).
        num_trials / num_ended / num_errors: trials the sweep plans, how many have ended, how many failed.
        best_trial_id: trial with the best ``metric`` at any epoch (None if no trial reported).
        best_config: that trial's flat TrainConfig params.
        best_metrics: its metrics at that best epoch.
        best_checkpoint: the checkpoint of that trial closest to the best epoch (None if none kept).
        parent_run_id / best_run_id / experiment_id: MLflow ids.
        tracking_uri / runs_url / charts_url: where to look (a view of the trials: table and charts).
        report: the JSON report of all of the above, in the sweep folder (also on the parent run).
    """

    name: str
    path: str
    finished: bool
    num_trials: int
    num_ended: int
    num_errors: int
    best_trial_id: str | None
    best_config: dict[str, Any]
    best_metrics: dict[str, Any]
    best_checkpoint: str | None
    parent_run_id: str
    best_run_id: str | None
    experiment_id: str
    tracking_uri: str
    runs_url: str
    charts_url: str = ""
    report: str = ""


def sweep_summary(result: SweepResult, space: SearchSpace) -> str:
    """End-of-sweep screen: status, the best trial's searched params and headline metrics, where to look."""
    metric, tuned = space.metric, {"loss", *space.tuned_params()}
    ended = f"{result.num_ended}/{result.num_trials} trials ended, {result.num_errors} failed"
    lines = [
        f"Sweep {result.name}: {ended}" + ("" if result.finished else " (interrupted: run again to resume)")
    ]
    best = result.best_metrics
    if result.best_trial_id is None:
        lines.append("No trial reported a result.")
    else:
        scores = [
            f"{m} = {format_cell(best.get(m), functools.partial(metric_number, key=m))}"
            for m in dict.fromkeys([metric, "rsum"])
        ]
        lines.append(f"Best trial {result.best_trial_id}: {', '.join(scores)}")
        config = {k: v for k, v in sorted(result.best_config.items()) if k in tuned}
        lines += ["", render_table([config]), ""] if config else [""]
        lines += [headline_table(best), ""]
        lines.append(f"Best checkpoint: {result.best_checkpoint}")
    if result.report:
        lines.append(f"Full report (config, every metric): {result.report}")
    lines.append(f"MLflow (parent run {result.parent_run_id}): {ui_command(result.tracking_uri)}")
    lines.append(f"  then open {result.runs_url}")
    if result.charts_url:
        lines.append(f"  as charts: {result.charts_url}")
    return "\n".join(lines)


def headline_table(metrics: dict[str, Any]) -> str:
    """R@1/5/10, CS@100/1000 and NCS@10 of both directions, one row per direction (columns some row has)."""
    rows = [{"dir": d, **{h: metrics.get(f"{h}_{d}") for h in HEADLINE_METRICS}} for d in DIRECTIONS]
    shown = [h for h in HEADLINE_METRICS if any(_is_metric(r[h]) for r in rows)]
    return render_table(rows, [Column("dir", " "), *(metric_column(h) for h in shown)])


def report_document(result: SweepResult) -> dict[str, Any]:
    """The whole result (full best config, every metric) for the JSON report; NaN/inf become null."""
    return {k: _json_safe(v) for k, v in dataclasses.asdict(result).items() if k != "report"}


def _json_safe(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _is_metric(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
