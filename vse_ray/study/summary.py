"""The study summary: per row (loss or control) and metric, mean ± std and a 95 % t-interval over seeds,
and the paired difference from the baseline (same seed, same warm-up) with its interval.

Everything is read back from MLflow (the child runs' `test_*` metrics and tags), so `vse-ray study --summary`
prints the same table without retraining.
"""

from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from dataclasses import dataclass

from mlflow import MlflowClient

from vse_ray.reporting import Column, metric_number, render_table
from vse_ray.study.stats import Interval, paired_interval, t_interval
from vse_ray.tracking.filters import tag_equals
from vse_ray.tune.mlflow_trials import PARENT_TAG

ROW_TAG, SEED_TAG, SIZE_TAG, BASELINE_TAG = (
    "vse_ray.study.row",
    "vse_ray.study.seed",
    "vse_ray.study.train_images",
    "vse_ray.study.baseline",
)
TEST_PREFIX = "test_"
# Columns of the console / Markdown table (all metrics go to the CSV); absent ones are left out.
TABLE_METRICS = (
    ("rsum", "rsum"),
    ("R@1 i2t", "R_at_1_i2t"),
    ("R@1 t2i", "R_at_1_t2i"),
    ("CS@100 i2t", "CS_at_100_i2t"),
    ("CS@100 t2i", "CS_at_100_t2i"),
    ("CS@1000 i2t", "CS_at_1000_i2t"),
    ("CS@100 i2t scene", "CS_at_100_i2t_scene"),
    ("CS@1000 i2t scene", "CS_at_1000_i2t_scene"),
)


@dataclass(frozen=True)
class RunRecord:
    """Test metrics of one child run of a study."""

    row: str
    seed: int
    train_images: int
    metrics: dict[str, float]
    run_id: str = ""


@dataclass(frozen=True)
class SummaryCell:
    """One (train_images, row, metric): its value over seeds and its paired difference from the baseline."""

    train_images: int
    row: str
    metric: str
    value: Interval
    diff: Interval | None  # None for the baseline row, or when no seed is shared with it


def collect_runs(tracking_uri: str, experiment_id: str, parent_run_id: str) -> list[RunRecord]:
    """The study's child runs that have test metrics."""
    client = MlflowClient(tracking_uri)
    runs = client.search_runs([experiment_id], tag_equals(PARENT_TAG, parent_run_id), max_results=10000)
    records = []
    for run in runs:
        tags, metrics = run.data.tags, run.data.metrics
        tested = {k.removeprefix(TEST_PREFIX): v for k, v in metrics.items() if k.startswith(TEST_PREFIX)}
        if ROW_TAG in tags and tested:
            records.append(
                RunRecord(tags[ROW_TAG], int(tags[SEED_TAG]), int(tags[SIZE_TAG]), tested, run.info.run_id)
            )
    return sorted(records, key=lambda r: (r.train_images, r.row, r.seed))


def summarize(records: list[RunRecord], baseline: str, rows: list[str] | None = None) -> list[SummaryCell]:
    """Cells for every metric of every (train_images, row), rows in `rows` order (else as found)."""
    grouped: dict[tuple[int, str], dict[int, dict[str, float]]] = defaultdict(dict)
    for record in records:
        grouped[(record.train_images, record.row)][record.seed] = record.metrics
    order = rows or list(dict.fromkeys(r.row for r in records))
    cells = []
    for size in sorted({key[0] for key in grouped}):
        base = grouped.get((size, baseline), {})
        for row in order:
            seeds = grouped.get((size, row))
            if not seeds:
                continue
            metrics = sorted({k for m in seeds.values() for k in m})
            for metric in metrics:
                values = {s: m[metric] for s, m in seeds.items() if metric in m}
                shared = sorted(s for s in values if metric in base.get(s, {}))
                diff = None
                if row != baseline and shared:
                    diff = paired_interval([values[s] for s in shared], [base[s][metric] for s in shared])
                cells.append(
                    SummaryCell(size, row, metric, t_interval([values[s] for s in sorted(values)]), diff)
                )
    return cells


def summary_csv(cells: list[SummaryCell]) -> str:
    """Long format: one line per (train_images, row, metric) with every statistic."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(
        ["train_images", "row", "metric", "seeds", "mean", "std", "ci95_low", "ci95_high"]
        + ["diff_mean", "diff_ci95_low", "diff_ci95_high", "outside_seed_noise"]
    )
    for c in cells:
        d = c.diff
        diff = [d.mean, d.low, d.high, d.excludes_zero] if d else ["", "", "", ""]
        writer.writerow(
            [c.train_images or "all", c.row, c.metric, c.value.n, c.value.mean, c.value.std, c.value.low]
            + [c.value.high, *diff]
        )
    return out.getvalue()


def _signed(value: float, key: str) -> str:
    return metric_number(value, key) if value < 0 else "+" + metric_number(value, key)


def _table_rows(cells: list[SummaryCell], long: bool) -> tuple[list[str], list[list[str]]]:
    present = {c.metric for c in cells}
    columns = [(title, key) for title, key in TABLE_METRICS if key in present]
    sizes = sorted({c.train_images for c in cells})
    header = (["train images"] if sizes != [0] else []) + ["run", "seeds"]
    for title, _ in columns:
        header += [title, f"Δ {title}"]
    index = {(c.train_images, c.row, c.metric): c for c in cells}
    rows = []
    for size, row in dict.fromkeys((c.train_images, c.row) for c in cells):
        line = ([str(size)] if sizes != [0] else []) + [row]
        seeds = max(index[(size, row, key)].value.n for _, key in columns if (size, row, key) in index)
        line.append(str(seeds))
        for _, key in columns:
            cell = index.get((size, row, key))
            if cell is None:
                line += ["-", "-"]
                continue
            v = cell.value
            value = metric_number(v.mean, key)
            value += "" if math.isnan(v.std) else f" ± {metric_number(v.std, key)}"
            if long and not math.isnan(v.low):
                value += f" [{metric_number(v.low, key)}, {metric_number(v.high, key)}]"
            d = cell.diff
            if d is None:
                line += [value, ""]
                continue
            diff = _signed(d.mean, key)
            if long and not math.isnan(d.low):
                diff += f" [{_signed(d.low, key)}, {_signed(d.high, key)}]"
            line += [value, diff + ("*" if d.excludes_zero else "")]
        rows.append(line)
    return header, rows


def _render(cells: list[SummaryCell], long: bool, fmt: str) -> str:
    header, rows = _table_rows(cells, long)
    records = [dict(zip(header, row, strict=True)) for row in rows]
    return render_table(records, [Column(title) for title in header], fmt, width=None)


def summary_text(cells: list[SummaryCell], baseline: str) -> str:
    """Console table: mean ± std over seeds; Δ = paired difference from the baseline (* outside the noise)."""
    return _render(cells, long=False, fmt="text") + "\n" + _legend(baseline, intervals=False)


def summary_markdown(cells: list[SummaryCell], baseline: str) -> str:
    """Markdown table with the 95 % intervals of the means and of the paired differences."""
    return _render(cells, long=True, fmt="markdown") + "\n\n" + _legend(baseline)


def _legend(baseline: str, intervals: bool = True) -> str:
    shown = " [95 % t-interval]" if intervals else ""
    return (
        f"mean ± std over seeds{shown}; Δ: paired difference from {baseline} (same seed, same "
        f"warm-up){shown}; * = its 95 % t-interval excludes 0 (outside the seed noise; needs 2+ seeds)"
    )


def parent_metrics(cells: list[SummaryCell]) -> dict[str, float]:
    """`<row>[-n<N>]/<metric>` (mean) and `<row>[-n<N>]/<metric>_diff` for the table's metrics.

    N is the `train_images` value; the names use only characters MLflow accepts in a metric name."""
    keys = {key for _, key in TABLE_METRICS}
    out = {}
    for c in cells:
        if c.metric not in keys:
            continue
        row = c.row if not c.train_images else f"{c.row}-n{c.train_images}"
        out[f"{row}/{c.metric}"] = c.value.mean
        if c.diff is not None:
            out[f"{row}/{c.metric}_diff"] = c.diff.mean
    return {k: v for k, v in out.items() if math.isfinite(v)}
