"""Plain-text table of MLflow runs (``vse-ray compare``): the MLflow UI's runs table, in a terminal."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mlflow.entities import Run

DEFAULT_METRICS = ("R_at_1_i2t", "R_at_1_t2i", "CS_at_100_i2t", "NCS_at_10_i2t", "train_loss")
MISSING = "-"


def fetch_runs(tracking_uri: str, experiment: str, parent_run_id: str | None = None) -> list[Run]:
    """All runs of an experiment (optionally only those nested under ``parent_run_id``).

    Raises:
        ValueError: when the experiment does not exist in the store at ``tracking_uri``.
    """
    from mlflow import MlflowClient  # imported here: `vse-ray` starts without MLflow

    client = MlflowClient(tracking_uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        names = [e.name for e in client.search_experiments()]
        raise ValueError(f"experiment {experiment!r} not found at {tracking_uri}; experiments there: {names}")
    from vse_ray.tune.mlflow_trials import PARENT_TAG

    query = f"tags.`{PARENT_TAG}` = '{parent_run_id}'" if parent_run_id else ""
    return list(client.search_runs([found.experiment_id], filter_string=query, max_results=5000))


def runs_table(
    runs: Sequence[Run],
    metric: str = "rsum",
    mode: str = "max",
    metrics: Sequence[str] = DEFAULT_METRICS,
    limit: int | None = None,
) -> str:
    """Aligned table of runs sorted by ``metric`` (best first; runs without it last).

    Columns: run name, status, short run id, short parent id, the params whose values differ between the
    listed runs (so a sweep shows what it varied), ``metric``, then the other ``metrics`` any run has.

    Raises:
        ValueError: for a ``mode`` other than ``"max"``/``"min"``.
    """
    from vse_ray.tune.mlflow_trials import PARENT_TAG

    if mode not in ("max", "min"):
        raise ValueError(f"mode must be 'max' or 'min', got {mode!r}")
    sign = -1.0 if mode == "max" else 1.0

    def key(run: Run) -> tuple[bool, float]:
        value = run.data.metrics.get(metric)
        missing = value is None or math.isnan(value)
        return missing, 0.0 if missing else sign * value

    ordered = sorted(runs, key=key)[:limit]
    varying = _varying_params(ordered)
    shown = [metric] + [m for m in metrics if m != metric and any(m in r.data.metrics for r in ordered)]
    header = ["run", "status", "run_id", "parent", *varying, *shown]
    rows = [
        [
            r.info.run_name or MISSING,
            r.info.status,
            r.info.run_id[:8],
            r.data.tags.get(PARENT_TAG, MISSING)[:8],
            *[r.data.params.get(p, MISSING) for p in varying],
            *[_fmt(r.data.metrics.get(m)) for m in shown],
        ]
        for r in ordered
    ]
    return format_table(header, rows)


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned text columns separated by two spaces, with a dashed rule under the header."""
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=True)]
    lines = [header, ["-" * w for w in widths], *rows]
    return "\n".join(
        "  ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )


def _varying_params(runs: Sequence[Run]) -> list[str]:
    names = sorted({p for r in runs for p in r.data.params})
    return [p for p in names if len({r.data.params.get(p) for r in runs}) > 1]


def _fmt(value: float | None) -> str:
    return MISSING if value is None else f"{value:.4g}"
