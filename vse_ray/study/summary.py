"""The study summary: per row (loss or control) and metric, mean ± std and a 95 % t-interval over seeds,
and the paired difference from the baseline (same seed, same warm-up) with its interval.

A study tables the test metrics its stages pass on (`vse_ray.study.summary_stage.write_summary`);
`vse-ray study --summary` reads the same numbers back from MLflow (the child runs' `test/...` metrics and
tags: :func:`collect_runs`) and prints the same table without retraining.
"""

from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mlflow import MlflowClient

from vse_ray.metrics.registry import TABLE
from vse_ray.reporting import DEFAULT_WIDTH, Column, metric_number, render_table
from vse_ray.study.stats import Interval, paired_interval, t_interval
from vse_ray.tracking import metric_keys
from vse_ray.tracking.filters import tag_equals
from vse_ray.tune.mlflow_trials import PARENT_TAG

ROW_TAG, SEED_TAG, SIZE_TAG, BASELINE_TAG = (
    "vse_ray.study.row",
    "vse_ray.study.seed",
    "vse_ray.study.train_images",
    "vse_ray.study.baseline",
)
STRENGTH_TAG = "vse_ray.study.strength"  # "weak" when the baseline is below min_baseline_rsum, else "ok"
# Columns of the Markdown table, as the metrics declare them (the CSV has every test metric the runs logged);
# absent ones are left out.
TABLE_METRICS = tuple((column.title, column.key) for column in TABLE)
# Columns of the console table: recall, and CS@K (image to text) against S-BERT and against the scene.
HEADLINE_METRICS = tuple((column.console, column.key) for column in TABLE if column.console)
RISING = "↑"  # after a row's name: a run of it whose validation rsum was still rising at its last epoch
AGAINST = "≠"  # the line under a row's Δ: where that Δ has the opposite sign to the evidence's settled Δ


@dataclass(frozen=True)
class RunRecord:
    """Test metrics of one child run of a study."""

    row: str
    seed: int
    train_images: int
    metrics: dict[str, float]
    run_id: str = ""


@dataclass(frozen=True)
class Evidence:
    """A study at strength that settles the sign of some differences of a smaller table's rows: its name,
    what it ran (one short phrase) and its paired differences from the same baseline, by (row, metric)."""

    study: str
    scale: str
    diffs: Mapping[tuple[str, str], Interval]

    def against(self, row: str, metric: str, diff: Interval | None) -> Interval | None:
        """The evidence's Δ of (row, metric) when it is settled (its interval excludes 0) and ``diff`` has
        the opposite sign, else None."""
        settled = self.diffs.get((row, metric))
        if diff is None or settled is None or not settled.excludes_zero:
            return None
        return settled if diff.mean * settled.mean < 0 else None


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
        tested = metric_keys.of_split(metrics, metric_keys.TEST)
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


def still_rising(history: Sequence[Mapping[str, float]], key: str = "rsum") -> bool:
    """Whether validation ``key`` was still rising at a run's last epoch (not settled): the last epoch's value
    is the run's best and higher than the epoch's before it."""
    values = [epoch[key] for epoch in history if key in epoch]
    return len(values) >= 2 and values[-1] > values[-2] and values[-1] >= max(values)


def rising_runs(
    histories: Mapping[tuple[int, str], Sequence[Sequence[Mapping[str, float]]]],
) -> dict[tuple[int, str], tuple[int, int]]:
    """``(train_images, row) -> (runs still rising, runs)`` from each run's per-epoch validation metrics."""
    return {key: (sum(map(still_rising, runs)), len(runs)) for key, runs in histories.items()}


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


def _value_text(value: Interval, key: str, long: bool) -> str:
    text = metric_number(value.mean, key)
    text += "" if math.isnan(value.std) else f" ± {metric_number(value.std, key)}"
    if long and not math.isnan(value.low):
        text += f" [{metric_number(value.low, key)}, {metric_number(value.high, key)}]"
    return text


def _diff_text(diff: Interval, key: str, long: bool) -> str:
    text = _signed(diff.mean, key)
    if long and not math.isnan(diff.low):
        text += f" [{_signed(diff.low, key)}, {_signed(diff.high, key)}]"
    return text + ("*" if diff.excludes_zero else "")


def _row_keys(cells: list[SummaryCell]) -> list[tuple[int, str]]:
    return list(dict.fromkeys((c.train_images, c.row) for c in cells))


def _seeds(index: dict, size: int, row: str, keys: list[str]) -> int:
    return max(index[(size, row, key)].value.n for key in keys if (size, row, key) in index)


def _full_rows(cells: list[SummaryCell]) -> tuple[list[str], list[list[str]]]:
    """Every TABLE_METRICS column, its Δ beside it, with 95 % intervals (the Markdown table)."""
    present = {c.metric for c in cells}
    columns = [(title, key) for title, key in TABLE_METRICS if key in present]
    sizes = sorted({c.train_images for c in cells})
    header = (["train images"] if sizes != [0] else []) + ["run", "seeds"]
    for title, _ in columns:
        header += [title, f"Δ {title}"]
    index = {(c.train_images, c.row, c.metric): c for c in cells}
    rows = []
    for size, row in _row_keys(cells):
        line = [str(size)] if sizes != [0] else []
        line += [row, str(_seeds(index, size, row, [key for _, key in columns]))]
        for _, key in columns:
            cell = index.get((size, row, key))
            if cell is None:
                line += ["-", "-"]
                continue
            diff = "" if cell.diff is None else _diff_text(cell.diff, key, True)
            line += [_value_text(cell.value, key, True), diff]
        rows.append(line)
    return header, rows


def _row_name(row: str, rising: tuple[int, int] | None) -> str:
    """The row's name, marked when some of its runs were still rising (``↑``; ``↑1/3``: 1 of 3 runs)."""
    if not rising or not rising[0]:
        return row
    return f"{row} {RISING}" + ("" if rising[0] == rising[1] else f"{rising[0]}/{rising[1]}")


def _interval_text(value: Interval, key: str) -> str:
    """``low…high``, each signed (a compact interval for a console cell)."""
    return f"{_signed(value.low, key)}…{_signed(value.high, key)}"


def _console_rows(
    cells: list[SummaryCell],
    rising: Mapping[tuple[int, str], tuple[int, int]],
    evidence: Evidence | None = None,
) -> tuple[list[str], list[list[str]], set[int]]:
    """HEADLINE_METRICS columns, mean ± std; each row's Δ on the line below its values; ``rising``: the
    counts of :func:`rising_runs` (rows marked with :func:`_row_name`); ``evidence``: where a Δ has the
    opposite sign to the evidence's settled Δ, a line under it gives the evidence's interval (``≠``).

    Returns the header, the lines and the seed counts seen (a seeds column only when they differ).
    """
    present = {c.metric for c in cells}
    columns = [(title, key) for title, key in HEADLINE_METRICS if key in present]
    keys = [key for _, key in columns]
    sizes = sorted({c.train_images for c in cells})
    index = {(c.train_images, c.row, c.metric): c for c in cells}
    seeds = {_seeds(index, size, row, keys) for size, row in _row_keys(cells)}
    header = (["train images"] if sizes != [0] else []) + ["run"] + (["seeds"] if len(seeds) > 1 else [])
    header += [title for title, _ in columns]
    rows = []
    for size, row in _row_keys(cells):
        lead = [str(size)] if sizes != [0] else []
        count = [str(_seeds(index, size, row, keys))] if len(seeds) > 1 else []
        found = [index.get((size, row, key)) for key in keys]
        rows.append(
            lead
            + [_row_name(row, rising.get((size, row)))]
            + count
            + ["-" if c is None else _value_text(c.value, k, False) for c, k in zip(found, keys, strict=True)]
        )
        if any(c is not None and c.diff is not None for c in found):
            diffs = [
                "" if c is None or c.diff is None else _diff_text(c.diff, k, False)
                for c, k in zip(found, keys, strict=True)
            ]
            rows.append([""] * len(lead) + ["  Δ"] + [""] * len(count) + diffs)
        against = [
            None if evidence is None or c is None else evidence.against(row, k, c.diff)
            for c, k in zip(found, keys, strict=True)
        ]
        if any(against):
            texts = ["" if a is None else _interval_text(a, k) for a, k in zip(against, keys, strict=True)]
            rows.append([""] * len(lead) + [f"  {AGAINST} study"] + [""] * len(count) + texts)
    return header, rows, seeds


def _render(header: list[str], rows: list[list[str]], fmt: str, first_numeric: int) -> str:
    records = [dict(zip(header, row, strict=True)) for row in rows]
    columns = [Column(title, numeric=i >= first_numeric or None) for i, title in enumerate(header)]
    return render_table(records, columns, fmt, width=DEFAULT_WIDTH if fmt == "text" else None)


def summary_text(
    cells: list[SummaryCell],
    baseline: str,
    rising: Mapping[tuple[int, str], tuple[int, int]] | None = None,
    evidence: Evidence | None = None,
) -> str:
    """Console table (fits 120 columns): the headline metrics, mean ± std over seeds, Δ under each value.

    ``rising`` (:func:`rising_runs`) marks the rows with runs whose validation rsum was still rising at the
    last epoch, and a line says what the mark means. ``evidence``: under a Δ of the opposite sign to the
    evidence's settled Δ, the evidence's 95 % interval, and a line says what it is.
    """
    rising = rising or {}
    header, rows, seeds = _console_rows(cells, rising, evidence)
    table = _render(header, rows, "text", header.index("run") + 1)
    if seeds == {1}:
        noise = [
            f"One seed; Δ (line below): difference from {baseline} (same warm-up).",
            "2+ seeds add ± std and mark with * a Δ outside the seed noise.",
        ]
    else:
        over = f"{seeds.pop()} seeds" if len(seeds) == 1 else "seeds"
        noise = [
            f"mean ± std over {over}; Δ (line below): paired difference from {baseline} (same seed, same "
            "warm-up);",
            "* = its 95 % t-interval excludes 0 (outside the seed noise).",
        ]
    cs = "CS@K: image-to-text coherent score against S-BERT relevance; scene: against the scene."
    unsettled = [
        f"{RISING} = validation rsum still rising at the last epoch ({RISING}1/3: in 1 of 3 runs): "
        "not settled;",
        "more epochs would move its numbers.",
    ]
    marked = any(count for count, _ in rising.values())
    against = []
    if any(line[header.index("run")].strip() == f"{AGAINST} study" for line in rows) and evidence:
        against = [
            f"{AGAINST} study: the Δ above has the opposite sign to the study {evidence.study} at strength "
            f"({evidence.scale});",
            "the line gives that study's 95 % t-interval of the same paired Δ, which excludes 0.",
        ]
    return "\n".join([table, *noise, cs, *(unsettled if marked else []), *against])


def summary_markdown(cells: list[SummaryCell], baseline: str) -> str:
    """Markdown table of every TABLE_METRICS column, with 95 % intervals of means and paired differences."""
    header, rows = _full_rows(cells)
    return _render(header, rows, "markdown", header.index("seeds") + 1) + "\n\n" + _legend(baseline)


def _legend(baseline: str) -> str:
    return (
        f"mean ± std over seeds [95 % t-interval]; Δ: paired difference from {baseline} (same seed, same "
        "warm-up) [95 % t-interval]; * = its 95 % t-interval excludes 0 (outside the seed noise; "
        "needs 2+ seeds)"
    )


def strength_note(cells: list[SummaryCell], baseline: str, minimum: float) -> str | None:
    """One line when the baseline's mean test rsum is below `minimum` at some train size (a weak baseline:
    the study's differences then say nothing about the claim), else None."""
    weak = [
        c
        for c in cells
        if c.row == baseline and c.metric == "rsum" and (math.isnan(c.value.mean) or c.value.mean < minimum)
    ]
    if not weak:
        return None
    where = ", ".join(
        f"{c.value.mean:.1f}" + (f" at {c.train_images} train images" if c.train_images else "") for c in weak
    )
    return (
        f"WEAK BASELINE: {baseline} test rsum {where} < min_baseline_rsum {minimum:g}; the differences below "
        "are not evidence for or against the claim (train longer or warm up more)"
    )
