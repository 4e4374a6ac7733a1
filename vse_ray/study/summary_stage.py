"""The study's summary stage: tables, trade-off plot and MLflow view on the parent run, from the numbers the
stages before it pass on; and reading a finished study back from MLflow (`vse-ray study --summary`)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from mlflow import MlflowClient

from vse_ray.study.context import StudyContext, StudyResult, TrainedRun, experiment_name
from vse_ray.study.plots import tradeoff_figure
from vse_ray.study.spec import StudySpec
from vse_ray.study.summary import (
    ROW_TAG,
    SIZE_TAG,
    STRENGTH_TAG,
    Evidence,
    RunRecord,
    collect_runs,
    rising_runs,
    strength_note,
    summarize,
    summary_csv,
    summary_markdown,
    summary_text,
)
from vse_ray.tracking import metric_keys as keys
from vse_ray.tracking import resolve_tracking_uri
from vse_ray.tracking.artifacts import log_figures
from vse_ray.tracking.filters import tag_equals
from vse_ray.tracking.recorder import METRICS_ARTIFACT, RunRecorder
from vse_ray.tracking.runs import RUN_NAME_TAG
from vse_ray.tracking.views import comparison_view, save_view, view_url
from vse_ray.tune.mlflow_trials import PARENT_TAG

SUMMARY_DIR = "studies"  # <output_dir>/studies/<name>/: the summary files (and the study's lock)


def run_histories(
    tracking_uri: str, experiment_id: str, parent_run_id: str
) -> dict[tuple[int, str], list[list[dict[str, float]]]]:
    """(train_images, row) -> per run (seed) -> every epoch's validation metrics (the run's `metrics.json`
    history, the shared warm-up's epochs included); a run that has not written it yet is left out."""
    client = MlflowClient(tracking_uri)
    out: dict[tuple[int, str], list[list[dict[str, float]]]] = {}
    for run in client.search_runs([experiment_id], tag_equals(PARENT_TAG, parent_run_id), max_results=10000):
        row = run.data.tags.get(ROW_TAG)
        if row is None or not any(a.path == METRICS_ARTIFACT for a in client.list_artifacts(run.info.run_id)):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            path = client.download_artifacts(run.info.run_id, METRICS_ARTIFACT, tmp)
            history = json.loads(Path(path).read_text())["history"]
        out.setdefault((int(run.data.tags.get(SIZE_TAG, 0)), row), []).append(history)
    return out


def trained_histories(trained: dict[str, TrainedRun]) -> dict[tuple[int, str], list[list[dict[str, Any]]]]:
    """(train_images, row) -> per run (seed order) -> every epoch's validation metrics, the shared warm-up's
    epochs included: :func:`run_histories` of the runs this command trained."""
    out: dict[tuple[int, str], list[list[dict[str, Any]]]] = {}
    for item in sorted(trained.values(), key=lambda item: item.seed):
        out.setdefault((item.train_images, item.row), []).append(item.history)
    return out


def epoch_histories(
    ctx: StudyContext, histories: dict[tuple[int, str], list[list[dict[str, Any]]]]
) -> dict[str, list[list[dict[str, Any]]]]:
    """row (`row@size` with several sizes) -> per run (seed) -> per epoch validation metrics (every metric),
    the epochs after the shared warm-up, from ``histories`` (:func:`trained_histories`)."""
    out: dict[str, list[list[dict[str, Any]]]] = {}
    for (size, row), runs in histories.items():
        warmup = ctx.warmup_epochs[size]  # per size: with `warmup_steps` smaller sets warm up for more epochs
        label = row if not size else f"{row}@{size}"
        out[label] = [[e for e in history if e["epoch"] > warmup] for history in runs]
    return out


def save_study_view(ctx: StudyContext) -> str:
    """The MLflow view of the study's loss runs: one row per loss or control (its seeds averaged when there
    are several), the test headline metrics as columns, best test rsum first; returns its key."""
    runs = f"{tag_equals(PARENT_TAG, ctx.parent_run_id)} and tags.`{ROW_TAG}` LIKE '%'"
    state = comparison_view(
        runs,
        [keys.mlflow_key(k, keys.TEST) for k in keys.HEADLINE],
        keys.TEST_RSUM,
        group_by_tag=ROW_TAG if ctx.spec.seeds > 1 else None,
        groups=[variant.name for variant in ctx.spec.variants()],
    )
    return save_view(ctx.tracking_uri, ctx.experiment_id, state)


def write_summary(
    ctx: StudyContext,
    trained: dict[str, TrainedRun],
    tested: dict[str, dict[str, float]],
    evidence: Evidence | None = None,
) -> StudyResult:
    """Summary table (CSV + Markdown), trade-off plot and per-row metrics on the parent run; returns it.

    Its numbers are those of the stages before it: each run's test metrics (``tested``, from
    :func:`~vse_ray.study.scoring.score_on_test`) and validation history (``trained``, from the checkpoints
    Tune returned); nothing is read back from MLflow (``vse-ray study --summary`` reads the same numbers
    there: :func:`study_summary`). ``evidence``: the study at strength the console table is checked against
    (`summary_text`)."""
    spec = ctx.spec
    records = [
        RunRecord(item.row, item.seed, item.train_images, tested[name], item.run_id)
        for name, item in trained.items()
    ]
    records.sort(key=lambda r: (r.train_images, r.row, r.seed))
    cells = summarize(records, spec.baseline, [v.name for v in spec.variants()])
    folder = ctx.out / SUMMARY_DIR / spec.name
    folder.mkdir(parents=True, exist_ok=True)
    files = {"csv": folder / "summary.csv", "markdown": folder / "summary.md"}
    files["csv"].write_text(summary_csv(cells))
    claim = f"Claim: {spec.claim}\n\n" if spec.claim else ""
    weak = strength_note(cells, spec.baseline, spec.min_baseline_rsum)
    warning = f"**{weak}**\n\n" if weak else ""
    files["markdown"].write_text(
        f"# Study {spec.name}\n\n{warning}{claim}{summary_markdown(cells, spec.baseline)}\n"
    )
    client = MlflowClient(ctx.tracking_uri)
    client.set_tag(ctx.parent_run_id, STRENGTH_TAG, "weak" if weak else "ok")
    for path in files.values():
        client.log_artifact(ctx.parent_run_id, str(path), "summary")
    histories = trained_histories(trained)
    figure = tradeoff_figure(epoch_histories(ctx, histories))
    log_figures(client, ctx.parent_run_id, {"tradeoff": figure}, "plots")
    client.log_dict(ctx.parent_run_id, ctx.seconds, "seconds.json")
    RunRecorder(ctx.parent_run_id, ctx.tracking_uri).finish()
    table = (weak + "\n" if weak else "") + summary_text(
        cells, spec.baseline, rising_runs(histories), evidence
    )
    view = save_study_view(ctx)
    return StudyResult(
        cells,
        ctx.tracking_uri,
        ctx.experiment_id,
        ctx.parent_run_id,
        table,
        {k: str(v) for k, v in files.items()},
        dict(ctx.seconds),
        view_url(ctx.tracking_uri, ctx.experiment_id, view),
        view_url(ctx.tracking_uri, ctx.experiment_id, view, chart=True),
    )


def study_summary(spec: StudySpec, output_dir: str | Path) -> str:
    """The summary table of a study already run in `output_dir`, read from MLflow (nothing retrained)."""
    out = Path(output_dir).expanduser().resolve()
    if not (out / "mlflow.db").is_file():
        raise ValueError(f"{out}: no MLflow store (mlflow.db); run the study with this --output-dir first")
    uri = resolve_tracking_uri(None, out)
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name(experiment_name(spec))
    runs = (
        client.search_runs([experiment.experiment_id], tag_equals(RUN_NAME_TAG, spec.name))
        if experiment
        else []
    )
    if experiment is None or not runs:
        raise ValueError(f"{out}: study {spec.name!r} has not been run here (no MLflow parent run)")
    parent = runs[0].info.run_id
    records = collect_runs(uri, experiment.experiment_id, parent)
    if not records:
        raise ValueError(f"{out}: study {spec.name!r} has no tested run yet; run it to the end first")
    cells = summarize(records, spec.baseline, [v.name for v in spec.variants()])
    histories = run_histories(uri, experiment.experiment_id, parent)
    return summary_text(cells, spec.baseline, rising_runs(histories))
