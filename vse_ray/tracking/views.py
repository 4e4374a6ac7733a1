"""Saved views of the MLflow UI's runs page: which runs, which columns, grouped how, opened by one link.

MLflow 3.17's experiment page opens the view saved in the experiment tag ``mlflow.sharedViewState.<key>``
when its link carries ``?viewStateShareKey=<key>``: the tag that the page's own "Share" button writes, a JSON
object of the page's search facets (``searchFilter``, ``orderByKey``, ...) and UI state (``selectedColumns``,
``groupBy``, ...); fields left out keep the page's defaults. ``compareRunsMode=CHART`` opens the chart view
of the same state. Nothing else is stored: a view is one experiment tag.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from mlflow import MlflowClient

from vse_ray.tracking.uri import runs_table_url

RUN_COLOR_TAG = "mlflow.runColor"  # a run's colour in the page's table and charts
# Matplotlib's tab10: one colour per row of a comparison (the seeds of a loss share theirs).
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
SHARE_TAG_PREFIX = "mlflow.sharedViewState."
SHARE_URL_PARAM = "viewStateShareKey"
MODE_URL_PARAM = "compareRunsMode"


def _column(kind: str, key: str) -> str:
    """The page's name of a column: ``metrics.`test/rsum```, ``params.`lr```, ``tags.`...```."""
    return f"{kind}.`{key}`"


def run_color(index: int) -> str:
    """The colour of the ``index``-th row of a comparison."""
    return PALETTE[index % len(PALETTE)]


def comparison_view(
    search_filter: str,
    metrics: Sequence[str],
    order_by: str,
    params: Sequence[str] = (),
    group_by_tag: str | None = None,
    groups: Sequence[str] = (),
) -> dict[str, Any]:
    """The runs page state that compares the runs of ``search_filter`` at a glance.

    Args:
        search_filter: which runs (an MLflow filter string), e.g. the loss runs of one study.
        metrics: the metric columns, in order; the chart view draws every metric, by prefix sections.
        order_by: the metric the rows are sorted by, best (highest) first.
        params: param columns after the metrics.
        group_by_tag: one row per value of this tag, its metrics averaged over the runs that share it (the
            seeds of a loss); charts then draw one bar per group.
        groups: values of ``group_by_tag`` whose rows start collapsed (the page expands a group by default).
    """
    state: dict[str, Any] = {
        "searchFilter": search_filter,
        "orderByKey": _column("metrics", order_by),
        "orderByAsc": False,
        "selectedColumns": [_column("metrics", m) for m in metrics] + [_column("params", p) for p in params],
        "runsHiddenMode": "SHOW_ALL",
        "hideEmptyCharts": True,
        "useGroupedValuesInCharts": True,
        "groupBy": None,
    }
    if group_by_tag is not None:
        state["groupBy"] = {
            "aggregateFunction": "average",
            "groupByKeys": [{"mode": "tag", "groupByData": group_by_tag}],
        }
        # the page's id of a group: `<mode>.<key>.<value>`
        state["groupsExpanded"] = {f"tag.{group_by_tag}.{value}": False for value in groups}
    return state


def save_view(tracking_uri: str, experiment_id: str, state: dict[str, Any]) -> str:
    """Store ``state`` on the experiment; returns its key (the same state gives the same key)."""
    text = json.dumps(state, sort_keys=True)
    key = hashlib.sha256(text.encode()).hexdigest()[:16]
    MlflowClient(tracking_uri).set_experiment_tag(experiment_id, f"{SHARE_TAG_PREFIX}{key}", text)
    return key


def view_url(tracking_uri: str, experiment_id: str, key: str, chart: bool = False) -> str:
    """Link to the saved view ``key`` (its runs table, or its chart view)."""
    mode = f"&{MODE_URL_PARAM}=CHART" if chart else ""
    return f"{runs_table_url(tracking_uri, experiment_id)}?{SHARE_URL_PARAM}={key}{mode}"
