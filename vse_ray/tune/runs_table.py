"""The ``vse-ray compare`` table of MLflow runs: the MLflow UI's runs table, in a terminal or a file.

A sweep's parent run is shown as its best trial (its ``best.*`` params and ``best_*`` metrics without the
prefix), and a param is shown when it differs between runs compared with each other: the trials of one
sweep, or the top-level runs (plain training runs and sweeps as their best trials).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vse_ray.reporting import Column, metric_column, metric_number, render_table
from vse_ray.tracking import metric_keys as keys
from vse_ray.tracking.filters import tag_equals
from vse_ray.tracking.tags import BEST_METRIC, BEST_PARAM, PARENT_TAG, SWEEP_PARAM

if TYPE_CHECKING:
    from mlflow.entities import Run

DEFAULT_METRICS = tuple(
    keys.mlflow_key(k) for k in ("rsum", "R_at_1_i2t", "R_at_1_t2i", "CS_at_100_i2t", "CS_at_100_i2t_scene")
)
_INT = re.compile(r"[+-]?\d+")


@dataclass(frozen=True)
class RunRow:
    """One run as the table shows it: a sweep's parent carries its best trial's params and metrics."""

    name: str
    status: str
    run_id: str
    parent_run_id: str | None
    params: dict[str, str]
    metrics: dict[str, float]
    is_sweep: bool


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
    query = tag_equals(PARENT_TAG, parent_run_id) if parent_run_id else ""
    return list(client.search_runs([found.experiment_id], filter_string=query, max_results=5000))


def run_row(run: Run) -> RunRow:
    """``run`` as a table row; a sweep's parent run becomes its best trial."""
    params, metrics = dict(run.data.params), dict(run.data.metrics)
    best = {k.removeprefix(BEST_PARAM): v for k, v in run.data.tags.items() if k.startswith(BEST_PARAM)}
    is_sweep = bool(best) or any(k.startswith(SWEEP_PARAM) for k in params)
    if is_sweep:
        params = best | {k: v for k, v in params.items() if k.startswith(SWEEP_PARAM)}
        metrics = {k.removeprefix(BEST_METRIC): v for k, v in metrics.items() if k.startswith(BEST_METRIC)}
    name = run.info.run_name or run.info.run_id[:8]
    return RunRow(
        name=f"{name} (best)" if is_sweep else name,
        status=run.info.status,
        run_id=run.info.run_id,
        parent_run_id=run.data.tags.get(PARENT_TAG),
        params=params,
        metrics=metrics,
        is_sweep=is_sweep,
    )


def runs_table(
    runs: Sequence[Run],
    metric: str = keys.VAL_RSUM,
    mode: str = "max",
    metrics: Sequence[str] = (),
    params: str = "differ",
    limit: int | None = None,
    fmt: str = "text",
    width: int | None = 120,
) -> str:
    """Runs sorted by ``metric`` (best first; runs without it last) as a ``fmt`` table.

    Columns: run name, status (csv/json add the run and parent ids), the params chosen by ``params``
    (``"differ"``: those that differ between runs compared with each other; ``"all"``; ``"none"``; or
    comma-separated names), ``metric``, the ``DEFAULT_METRICS`` some run has, then ``metrics``, then each
    metric a run has the paper's number of (an evaluation scored by its recipe's paper protocol). A metric
    with the paper's number is followed by it and the difference (run - paper).

    Raises:
        ValueError: for a ``mode`` other than ``"max"``/``"min"``, a bad ``fmt``, or a ``metric``, one of
            ``metrics`` or a named param that no run has.
    """

    if mode not in ("max", "min"):
        raise ValueError(f"mode must be 'max' or 'min', got {mode!r}")
    rows = [run_row(r) for r in runs]
    _check_present(rows, [metric, *metrics], "metric", lambda r: r.metrics)
    sign = -1.0 if mode == "max" else 1.0

    def key(row: RunRow) -> tuple[bool, float, bool]:
        value = row.metrics.get(metric)
        if value is None or math.isnan(value):
            return True, 0.0, not row.is_sweep
        return False, sign * value, not row.is_sweep

    ordered = sorted(rows, key=key)[:limit]
    shown_params = _chosen_params(rows, params)
    beside = sorted({k.removeprefix(f"{keys.PAPER}/") for r in ordered for k in r.metrics if _is_paper(k)})
    wanted = dict.fromkeys([metric, *DEFAULT_METRICS, *metrics, *beside])
    shown = [m for m in wanted if m == metric or m in metrics or any(m in r.metrics for r in ordered)]
    ids = [Column("run_id"), Column("parent_run_id")] if fmt in ("csv", "json") else []
    param_columns = [Column(p, optional=True) for p in shown_params]
    metric_columns = [c for m in shown for c in _metric_and_paper(m, m in beside)]
    columns = [Column("run"), Column("status"), *ids, *param_columns, *metric_columns]
    table = [
        {
            "run": r.name,
            "status": r.status,
            "run_id": r.run_id,
            "parent_run_id": r.parent_run_id,
            **{p: _param_value(r.params.get(p)) for p in shown_params},
            **{m: r.metrics.get(m) for m in shown},
            **_paper_cells(r.metrics, beside),
        }
        for r in ordered
    ]
    return render_table(table, columns, fmt, width)


def _is_paper(key: str) -> bool:
    return key.startswith(f"{keys.PAPER}/")


def _metric_and_paper(key: str, with_paper: bool) -> list[Column]:
    """The column of metric ``key``, then (``with_paper``) the paper's number and the difference."""
    column = metric_column(key)
    if not with_paper:
        return [column]
    paper = Column(keys.paper_key(key), f"paper {column.title}", lambda v: metric_number(v, key))
    difference = Column(f"{key} - paper", f"Δ {column.title}", lambda v: metric_number(v, key))
    return [column, paper, difference]


def _paper_cells(metrics: Mapping[str, float], beside: Sequence[str]) -> dict[str, float | None]:
    """A run's paper numbers and differences (run - paper) for the metrics in ``beside``."""
    cells: dict[str, float | None] = {}
    for key in beside:
        paper = metrics.get(keys.paper_key(key))
        cells[keys.paper_key(key)] = paper
        run = metrics.get(key)
        cells[f"{key} - paper"] = None if paper is None or run is None else run - paper
    return cells


def _chosen_params(rows: Sequence[RunRow], choice: str) -> list[str]:
    """The param columns, chosen over every fetched run (``limit`` does not hide what a sweep searched)."""
    if choice == "none":
        return []
    if choice == "all":
        return sorted({p for r in rows for p in r.params})
    if choice == "differ":
        return _differing_params(rows)
    names = [p.strip() for p in choice.split(",") if p.strip()]
    _check_present(rows, names, "param", lambda r: r.params)
    return names


def _differing_params(rows: Sequence[RunRow]) -> list[str]:
    """Params whose values differ within a group of runs compared with each other (same parent run)."""
    groups: dict[str | None, list[RunRow]] = {}
    for row in rows:
        groups.setdefault(None if row.is_sweep else row.parent_run_id, []).append(row)
    names = sorted({p for r in rows for p in r.params if not p.startswith(SWEEP_PARAM)})
    return [p for p in names if any(len({r.params.get(p) for r in group}) > 1 for group in groups.values())]


def _check_present(
    rows: Sequence[RunRow], names: Sequence[str], kind: str, values: Callable[[RunRow], Mapping]
) -> None:
    if not rows:
        return
    have = {k for r in rows for k in values(r)}
    missing = [n for n in names if n not in have]
    if missing:
        raise ValueError(
            f"no run has {kind} {missing[0]!r}; {kind}s there: {', '.join(sorted(have)) or 'none'}"
        )


def _param_value(text: str | None) -> Any:
    """An MLflow param as a number when it is one (right-aligned, compact), else the text."""
    if text is None:
        return None
    if _INT.fullmatch(text):
        return int(text)
    try:
        number = float(text)
    except ValueError:
        return text
    return number if math.isfinite(number) else text
