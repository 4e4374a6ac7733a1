"""`run_study`: data → parent run → shared warm-up per seed → every loss and control → test → summary.

Protocol (the design's "Comparing losses"): every run of one seed starts from the same warm-up checkpoint,
optimiser state included (`TrainConfig.init_checkpoint`); each trains its own epochs and keeps its best
validation-rsum snapshot, which is scored on the test split. Both training stages run through the one Tune
driver (`vse_ray.tune.tuner`), so they are parallel, resumable (rerun the same study in the same output
folder) and take fractional GPUs on a cluster.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from vse_ray.log_file import route_library_logs
from vse_ray.study.context import StageClock, StudyResult, open_study
from vse_ray.study.data_stage import prepare_data
from vse_ray.study.scoring import score_on_test
from vse_ray.study.spec import StudySpec
from vse_ray.study.summary import Evidence
from vse_ray.study.summary_stage import SUMMARY_DIR, write_summary
from vse_ray.study.variants import train_variants
from vse_ray.study.warmup import train_warmups, warmup_schedule
from vse_ray.tracking import resolve_tracking_uri, ui_command
from vse_ray.tracking.lifecycle import (
    ConfigRecord,
    claim_run_folder,
    flat,
    keep_config,
    prepare_store_beside,
)
from vse_ray.tracking.recorder import RunRecorder


def run_study(
    spec: StudySpec,
    output_dir: str | Path,
    *,
    ray_options: dict[str, Any] | None = None,
    wait: bool = False,
    table_end: str = "",
    evidence: Evidence | None = None,
) -> StudyResult:
    """Run (or resume) the whole study; print one progress line per stage and the summary table
    (``table_end``: a line printed under it; ``evidence``: a study at strength its Δs are checked against).

    Before Ray starts, the study is claimed as every run is (:mod:`vse_ray.tracking.lifecycle`): the
    tracking server answers, ``<output_dir>/studies/<name>`` is locked (one writer, until this call
    returns; ``wait`` queues behind another command running it) and a rerun has the config the study
    started with (:func:`study_record`; another is refused naming the keys that differ); the store is
    created while Ray starts.

    Args:
        spec: A validated study (`load_study`, `parse_study`, `StudySpec.validate`), not validated again.
        output_dir: Data, Tune trials, MLflow store, summary files and the log file go here.
        ray_options: `ray.init` keywords when a local Ray instance is started (e.g. `num_cpus`).
        table_end: A line printed under the summary table (the demo's pointer to the evidence).
        evidence: Where a Δ of the table has the opposite sign to this study's settled Δ, the table says so
            under it (`vse_ray.study.summary.summary_text`).
    """
    out = Path(output_dir).expanduser().resolve()
    log_path = route_library_logs(out)  # MLflow's store-creation lines too
    folder = out / SUMMARY_DIR / spec.name
    where = f"study {spec.name!r} ({folder})"
    uri = resolve_tracking_uri(None, out)
    lock = claim_run_folder(folder, where, "choose another --output-dir", uri, wait=wait, store=False)
    try:
        keep_config(
            ConfigRecord.of(folder),
            study_record(spec),
            f"study {spec.name!r} in {out}",
            "run it with the config it started with to resume it, or choose another --output-dir",
        )
        result = _run_claimed(spec, out, log_path, uri, ray_options, evidence)
    finally:
        lock.release()
    print_result(result, table_end)
    return result


def study_record(spec: StudySpec) -> dict[str, Any]:
    """What a study computes, as flat keys (``train.lr``, ``losses.ladder.thresholds``): its spec without
    the fields a rerun may change freely (where its file is, its claim, the strength threshold of its
    warning, the resources its trials take, the keys it requires from the command line)."""
    fields = dataclasses.asdict(spec)
    for key in ("source", "claim", "min_baseline_rsum", "resources", "requires"):
        fields.pop(key)
    return flat(fields)


def _run_claimed(
    spec: StudySpec,
    out: Path,
    log_path: Path,
    uri: str,
    ray_options: dict[str, Any] | None,
    evidence: Evidence | None = None,
) -> StudyResult:
    """The stages of a claimed study (see :func:`run_study`); the MLflow store at ``uri`` is created while
    Ray starts."""
    from vse_ray.ray_session import ensure_ray

    print(f"[{spec.name}] Ray, Tune and MLflow logs: {log_path}", flush=True)
    clock = StageClock(spec.name)
    with clock.stage("ray start"):
        prepare_store_beside(uri, lambda: ensure_ray(**(ray_options or {})))
    with clock.stage("data"):
        data_dir = prepare_data(spec, out)
    ctx = open_study(spec, out, data_dir, clock.seconds)
    ctx.warmup_epochs = warmup_schedule(spec, data_dir)
    if spec.warmup_steps:
        per_size = ", ".join(f"{e} epochs at {n or 'all'} images" for n, e in ctx.warmup_epochs.items())
        print(f"[{spec.name}] warm-up of {spec.warmup_steps} steps: {per_size}", flush=True)
    try:
        warmups: dict[tuple[int, int], str] = {}
        if any(ctx.warmup_epochs.values()):
            with clock.stage("warm-up"):
                warmups = train_warmups(ctx)
        with clock.stage("train"):
            trained = train_variants(ctx, warmups)
        with clock.stage("test"):
            tested = score_on_test(ctx, trained)
    except KeyboardInterrupt:
        RunRecorder(ctx.parent_run_id, ctx.tracking_uri).finish("KILLED")
        raise
    except Exception:  # a full disk (`fit_trials`): the rerun resumes
        RunRecorder(ctx.parent_run_id, ctx.tracking_uri).finish("FAILED", "error")
        raise
    clock.stop()
    return write_summary(ctx, trained, tested, evidence)


def print_result(result: StudyResult, table_end: str = "") -> None:
    """The summary table (and ``table_end`` under it), where its files and MLflow views are, and the
    seconds per stage."""
    print(result.table)
    if table_end:
        print(table_end)
    print(f"Full table (every metric, 95 % intervals): {result.files['markdown']}")
    print(f"  as CSV: {result.files['csv']}")
    print(f"  in MLflow: the artifacts summary/ of run {result.parent_run_id}")
    print(f"MLflow: {ui_command(result.tracking_uri)}")
    print(f"  losses side by side: {result.runs_url}")
    print(f"  as charts: {result.charts_url}")
    print(json.dumps({k: round(v, 1) for k, v in result.seconds.items()}))
