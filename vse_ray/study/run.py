"""`run_study`: data → shared warm-up per seed → every loss and control as Tune trials → test → summary.

Protocol (the design's "Comparing losses"): every run of one seed starts from the same warm-up checkpoint,
optimiser state included (`TrainConfig.init_checkpoint`); each trains its own epochs and keeps its best
validation-rsum snapshot, which is scored on the test split. Both training stages run through the one Tune
driver (`vse_ray.tune.engine`), so they are parallel, resumable (rerun the same study in the same output
folder) and take fractional GPUs on a cluster.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlflow import MlflowClient

from vse_ray.data.precompute.config import AUTO, PrecomputeConfig
from vse_ray.data.precompute.run import precompute
from vse_ray.data.store.readers import load_captions, load_manifest
from vse_ray.data.store.split_data import SplitData, load_split
from vse_ray.evaluation.embed import evaluate_split, scoring_device
from vse_ray.log_file import route_library_logs
from vse_ray.models import rebuild_model
from vse_ray.study.plots import tradeoff_figure
from vse_ray.study.spec import StudySpec, Variant
from vse_ray.study.summary import (
    BASELINE_TAG,
    ROW_TAG,
    SEED_TAG,
    SIZE_TAG,
    STRENGTH_TAG,
    SummaryCell,
    collect_runs,
    strength_note,
    summarize,
    summary_csv,
    summary_markdown,
    summary_text,
)
from vse_ray.tracking import get_or_create_experiment, resolve_tracking_uri, ui_command
from vse_ray.tracking import metric_keys as keys
from vse_ray.tracking.artifacts import log_figures
from vse_ray.tracking.checkpoint import load_checkpoint
from vse_ray.tracking.filters import tag_equals
from vse_ray.tracking.recorder import METRICS_ARTIFACT, RunRecorder
from vse_ray.tracking.runs import RUN_NAME_TAG
from vse_ray.tracking.views import RUN_COLOR_TAG, comparison_view, run_color, save_view, view_url
from vse_ray.train.config import TrainConfig
from vse_ray.train.train_captions import first_images
from vse_ray.tune.engine import TuneRun, fit_trials, record_trial
from vse_ray.tune.mlflow_trials import PARENT_TAG
from vse_ray.tune.progress import StageEpochsBar
from vse_ray.tune.trial import NAMED_TRIAL_KEY, named_grid, run_named_trial


@dataclass
class StudyContext:
    """What every stage of one study shares: the spec, its folders and its MLflow parent run."""

    spec: StudySpec
    out: Path
    data_dir: str
    tracking_uri: str
    experiment_id: str
    parent_run_id: str
    seconds: dict[str, float] = field(default_factory=dict)
    warmup_epochs: dict[int, int] = field(default_factory=dict)  # train_images -> warm-up epochs

    def tune_run(
        self, stage: str, configs: dict[str, TrainConfig], epochs: int, cpus: float | None = None
    ) -> TuneRun:
        """The Tune run of one stage: one trial per named config, MLflow child runs named like them.

        ``epochs``: the stage's epochs over all its trials (the progress bar's total); ``cpus``: CPUs per
        trial (default: the study's ``resources.cpus_per_trial``)."""
        res = self.spec.resources
        cpus = float(res.get("cpus_per_trial", 1)) if cpus is None else cpus
        resources = {"cpu": cpus, "gpu": float(res.get("gpus_per_trial", 0))}
        dicts = {name: cfg.to_dict() for name, cfg in configs.items()}
        return TuneRun(
            name=f"{self.spec.name}-{stage}",
            storage_path=str(self.out / "ray_results"),
            tracking_uri=self.tracking_uri,
            experiment_id=self.experiment_id,
            parent_run_id=self.parent_run_id,
            trial_params=functools.partial(_named_params, configs=dicts),
            run_name=_named_run,
            resources=resources,
            metric=None if stage == "warmup" else "rsum",
            callbacks=[StageEpochsBar(f"[{self.spec.name}] {stage}", epochs)],
        )

    def tune_config(self) -> Any:
        """At most `resources.concurrent` trials at once (0: as resources allow), reusing trial processes."""
        from ray import tune

        concurrent = int(self.spec.resources.get("concurrent", 0))
        return tune.TuneConfig(max_concurrent_trials=concurrent or None, reuse_actors=True)


@dataclass
class StudyResult:
    """The summary cells, the MLflow ids and view links, where the tables went and the seconds per stage."""

    cells: list[SummaryCell]
    tracking_uri: str
    experiment_id: str
    parent_run_id: str
    table: str
    files: dict[str, str]
    seconds: dict[str, float]
    runs_url: str = ""
    charts_url: str = ""


def _named_params(config: dict[str, Any], *, configs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return TrainConfig.from_dict(configs[config[NAMED_TRIAL_KEY]]).to_flat_dict()


def _named_run(config: dict[str, Any]) -> str:
    return config[NAMED_TRIAL_KEY]


def run_name(variant: Variant, seed: int, train_images: int) -> str:
    """`<loss>[-<variant>][-n<train images>]-s<seed>`."""
    size = f"-n{train_images}" if train_images else ""
    return f"{variant.name}{size}-s{seed}"


def experiment_name(spec: StudySpec) -> str:
    return f"study-{spec.name}"


def prepare_data(spec: StudySpec, out: Path, num_cpus: int | None = None) -> str:
    """The precompute folder: the embedded dataset generated under `<out>/data`, or the spec's data_dir."""
    if spec.embedded is None:
        data_dir = str(Path(spec.data["data_dir"]).expanduser().resolve())
        load_manifest(data_dir)
        return data_dir
    sizes = spec.embedded
    finetune = bool(spec.train.get("finetune", False))
    config = PrecomputeConfig(
        dataset="synthetic",
        n_train=sizes["train_images"],
        n_val=sizes["val_images"],
        n_test=sizes["test_images"],
        seed=sizes["seed"],
        cnn="tiny" if finetune else AUTO,  # fine-tuning runs ignore the stored features
    )
    data_dir = out / "data"
    if not (data_dir / "manifest.json").is_file():
        precompute(config, str(data_dir), verbose=False)
    return str(data_dir)


def open_study(spec: StudySpec, output_dir: str | Path, data_dir: str) -> StudyContext:
    """Experiment `study-<name>` and the study's parent run (found again on a rerun)."""
    out = Path(output_dir).expanduser().resolve()
    uri = resolve_tracking_uri(None, out)
    experiment_id = get_or_create_experiment(experiment_name(spec), uri, out)
    params = {"study.source": spec.source, "study.baseline": spec.baseline, "study.seeds": spec.seeds}
    parent = RunRecorder.open(experiment_id, spec.name, uri, params, {BASELINE_TAG: spec.baseline})
    if not parent.client.list_artifacts(parent.run_id, "study.json"):
        described = {k: v for k, v in dataclasses.asdict(spec).items() if k != "source"}
        parent.client.log_dict(parent.run_id, described, "study.json")
    parent_id = parent.run_id
    return StudyContext(spec, out, data_dir, uri, experiment_id, parent_id)


def _stage_failed(results: Any, stage: str) -> None:
    """Raise for a stage whose trials failed, or that Tune ended early (Ctrl-C: it stops the trials and
    returns; their results have no checkpoint) as KeyboardInterrupt, which the CLI reports with its
    resume hint."""
    errors = [r for r in results if r.error is not None]
    if errors:
        names = ", ".join(str(r.config.get(NAMED_TRIAL_KEY)) for r in errors)
        raise RuntimeError(f"{stage}: trial(s) {names} failed: {errors[0].error}") from errors[0].error
    if any(r.checkpoint is None for r in results):
        raise KeyboardInterrupt(f"{stage}: stopped before every trial had a checkpoint")


def train_warmups(ctx: StudyContext) -> dict[tuple[int, int], str]:
    """One shared warm-up (`warmup_loss`) per (train_images, seed); returns its last checkpoint folder."""
    spec = ctx.spec
    baseline = spec.variants()[0]
    configs = {}
    for size, epochs in ctx.warmup_epochs.items():
        for seed in range(spec.seeds):
            cfg = spec.run_config(ctx.data_dir, baseline, seed, size, epochs)
            warm = dataclasses.replace(
                cfg, loss=cfg.warmup_loss, loss_params=dict(cfg.warmup_params), epochs=epochs
            )
            configs[run_name(Variant("warmup", {}), seed, size)] = _resolved(ctx, warm)
    epochs = sum(cfg.epochs for cfg in configs.values())
    run = ctx.tune_run("warmup", configs, epochs, cpus=warmup_cpus(spec.resources, len(configs)))
    dicts = {name: cfg.to_dict() for name, cfg in configs.items()}
    results = fit_trials(run, _trainable(dicts), named_grid(configs), tune_config=ctx.tune_config())
    _stage_failed(results, "warm-up")
    found = {}
    for result in results:
        cfg = configs[result.config[NAMED_TRIAL_KEY]]
        found[(cfg.train_images, cfg.seed)] = result.checkpoint.path
    return found


def warmup_schedule(spec: StudySpec, data_dir: str) -> dict[int, int]:
    """Warm-up epochs per train size (`StudySpec.warmup_epochs_at` of its number of train captions)."""
    if not spec.warmup_steps:
        return {size: spec.warmup_epochs for size in spec.train_sizes()}
    table = load_captions(data_dir, "train").select(["image_id"])
    return {size: spec.warmup_epochs_at(first_images(table, size).num_rows) for size in spec.train_sizes()}


def warmup_cpus(resources: dict[str, Any], n_warmups: int) -> float:
    """CPUs of each warm-up trial: its share of the CPUs when there are fewer warm-ups than trial slots.

    The warm-ups (one per seed) run before anything else, so with one seed on a 2-CPU machine a 1-CPU
    warm-up would leave a CPU idle; a trial's CPUs are its torch threads. Capped at the largest node's CPUs
    (a trial runs on one node); GPU trials keep their ``cpus_per_trial``.
    """
    import ray

    per_trial = float(resources.get("cpus_per_trial", 1))
    if float(resources.get("gpus_per_trial", 0)) > 0:
        return per_trial
    node_cpus = max(float(node["Resources"].get("CPU", 0)) for node in ray.nodes() if node["Alive"])
    share = float(int(float(ray.cluster_resources().get("CPU", 0)) // max(n_warmups, 1)))
    return max(per_trial, min(share, node_cpus))


def _resolved(ctx: StudyContext, cfg: TrainConfig) -> TrainConfig:
    return dataclasses.replace(
        cfg, output_dir=str(ctx.out), tracking_uri=ctx.tracking_uri, experiment=experiment_name(ctx.spec)
    ).resolved()


def _trainable(dicts: dict[str, dict[str, Any]]) -> Any:
    from ray import tune

    return tune.with_parameters(run_named_trial, configs=dicts)


def train_variants(ctx: StudyContext, warmups: dict[tuple[int, int], str]) -> dict[str, dict[str, Any]]:
    """Every (train_images, variant, seed) from its seed's warm-up; name -> run id and best snapshot."""
    spec = ctx.spec
    configs, rows = {}, {}
    colors = {variant.name: run_color(i) for i, variant in enumerate(spec.variants())}
    for size in spec.train_sizes():
        for variant in spec.variants():
            for seed in range(spec.seeds):
                warm = ctx.warmup_epochs[size]
                cfg = _resolved(ctx, spec.run_config(ctx.data_dir, variant, seed, size, warm))
                if warm:
                    cfg = dataclasses.replace(cfg, init_checkpoint=warmups[(size, seed)])
                name = run_name(variant, seed, size)
                configs[name] = dataclasses.replace(cfg, run_name=name)
                rows[name] = variant.name
    run = ctx.tune_run("train", configs, len(configs) * spec.epochs)
    dicts = {name: cfg.to_dict() for name, cfg in configs.items()}
    results = fit_trials(run, _trainable(dicts), named_grid(configs), tune_config=ctx.tune_config())
    _stage_failed(results, "training")
    trained = {}
    for result in results:
        name = result.config[NAMED_TRIAL_KEY]
        cfg = configs[name]
        tags = {ROW_TAG: rows[name], SEED_TAG: str(cfg.seed), SIZE_TAG: str(cfg.train_images)}
        tags[RUN_COLOR_TAG] = colors[rows[name]]
        run_id, checkpoint = record_trial(run, result, tags)
        trained[name] = {"run_id": run_id, "checkpoint": checkpoint}
    return trained


def test_runs(ctx: StudyContext, trained: dict[str, dict[str, Any]]) -> None:
    """Score each run's selected (best validation rsum) snapshot on the test split and record the evaluation
    on its run (`test/...` metrics, the full report as artifacts).

    A run that already has it (a resumed study: its trials had all ended before) is not scored again."""
    splits: dict[bool, SplitData] = {}
    device = scoring_device()
    for item in trained.values():
        recorder = RunRecorder(item["run_id"], ctx.tracking_uri)
        if recorder.has_evaluation(keys.TEST):
            continue
        with item["checkpoint"].as_directory() as folder:
            state = load_checkpoint(folder)
        model = rebuild_model(state)
        raw = model.feature_layout == "pixels"
        if raw not in splits:
            splits[raw] = load_split(ctx.data_dir, keys.TEST, raw=raw)
        cfg = TrainConfig.from_dict(state["config"])
        kwargs = {"ks": cfg.eval_ks, "cs_ks": cfg.cs_ks, "ncs_ks": cfg.ncs_ks}
        metrics = evaluate_split(model.to(device), splits[raw], cfg.eval_batch_size, device, kwargs)
        report = {"run_id": recorder.run_id, "split": keys.TEST, "protocol": "full", "metrics": metrics}
        recorder.record_evaluation(keys.TEST, "full", report)


def epoch_histories(ctx: StudyContext) -> dict[str, list[list[dict[str, float]]]]:
    """row -> per run (seed) -> per epoch validation metrics (every metric, the run's `metrics.json`), the
    epochs after the shared warm-up."""
    client = MlflowClient(ctx.tracking_uri)
    query = tag_equals(PARENT_TAG, ctx.parent_run_id)
    out: dict[str, list[list[dict[str, float]]]] = {}
    for run in client.search_runs([ctx.experiment_id], query, max_results=10000):
        row = run.data.tags.get(ROW_TAG)
        if row is None:
            continue
        size = int(run.data.tags.get(SIZE_TAG, 0))
        label = row if not size else f"{row}@{size}"
        with tempfile.TemporaryDirectory() as tmp:
            path = client.download_artifacts(run.info.run_id, METRICS_ARTIFACT, tmp)
            history = json.loads(Path(path).read_text())["history"]
        epochs = [e for e in history if e["epoch"] > ctx.spec.warmup_epochs]
        out.setdefault(label, []).append(epochs)
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


def write_summary(ctx: StudyContext) -> StudyResult:
    """Summary table (CSV + Markdown), trade-off plot and per-row metrics on the parent run; returns it."""
    spec = ctx.spec
    cells = summarize(
        collect_runs(ctx.tracking_uri, ctx.experiment_id, ctx.parent_run_id),
        spec.baseline,
        [v.name for v in spec.variants()],
    )
    folder = ctx.out / "studies" / spec.name
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
    log_figures(client, ctx.parent_run_id, {"tradeoff": tradeoff_figure(epoch_histories(ctx))}, "plots")
    client.log_dict(ctx.parent_run_id, ctx.seconds, "seconds.json")
    client.set_terminated(ctx.parent_run_id, status="FINISHED")
    table = (weak + "\n" if weak else "") + summary_text(cells, spec.baseline)
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


def run_study(
    spec: StudySpec, output_dir: str | Path, *, ray_options: dict[str, Any] | None = None
) -> StudyResult:
    """Run (or resume) the whole study; print one progress line per stage and the summary table.

    Args:
        spec: A study (validated again here, before Ray or MLflow start).
        output_dir: Data, Tune trials, MLflow store, summary files and the log file go here.
        ray_options: `ray.init` keywords when a local Ray instance is started (e.g. `num_cpus`).
    """
    from vse_ray.ray_session import ensure_ray

    spec.validate()
    out = Path(output_dir).expanduser().resolve()
    log_path = route_library_logs(out)
    print(f"[{spec.name}] Ray, Tune and MLflow logs: {log_path}", flush=True)
    clock = time.perf_counter()

    def stage(name: str, started: float) -> None:
        seconds = time.perf_counter() - started
        ctx_seconds[name] = seconds
        print(f"[{spec.name}] {name}: {seconds:.0f} s", flush=True)

    ctx_seconds: dict[str, float] = {}
    started = time.perf_counter()
    ensure_ray(**{"include_dashboard": False, **(ray_options or {})})
    stage("ray start", started)
    started = time.perf_counter()
    data_dir = prepare_data(spec, out)
    stage("data", started)
    ctx = open_study(spec, out, data_dir)
    ctx.seconds = ctx_seconds
    ctx.warmup_epochs = warmup_schedule(spec, data_dir)
    if spec.warmup_steps:
        per_size = ", ".join(f"{e} epochs at {n or 'all'} images" for n, e in ctx.warmup_epochs.items())
        print(f"[{spec.name}] warm-up of {spec.warmup_steps} steps: {per_size}", flush=True)
    try:
        warmups: dict[tuple[int, int], str] = {}
        if any(ctx.warmup_epochs.values()):
            started = time.perf_counter()
            warmups = train_warmups(ctx)
            stage("warm-up", started)
        started = time.perf_counter()
        trained = train_variants(ctx, warmups)
        stage("train", started)
        started = time.perf_counter()
        test_runs(ctx, trained)
        stage("test", started)
    except KeyboardInterrupt:
        MlflowClient(ctx.tracking_uri).set_terminated(ctx.parent_run_id, status="KILLED")
        raise
    ctx_seconds["total"] = time.perf_counter() - clock
    result = write_summary(ctx)
    print(result.table)
    print(f"Full table (every metric, 95 % intervals): {result.files['markdown']}")
    print(f"  as CSV: {result.files['csv']}")
    print(f"  in MLflow: the artifacts summary/ of run {result.parent_run_id}")
    ui = ui_command(result.tracking_uri)
    print(f"MLflow: {ui}" if ui else "MLflow:")
    print(f"  losses side by side: {result.runs_url}")
    print(f"  as charts: {result.charts_url}")
    print(json.dumps({k: round(v, 1) for k, v in ctx_seconds.items()}))
    return result


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
    if not runs:
        raise ValueError(f"{out}: study {spec.name!r} has not been run here (no MLflow parent run)")
    records = collect_runs(uri, experiment.experiment_id, runs[0].info.run_id)
    if not records:
        raise ValueError(f"{out}: study {spec.name!r} has no tested run yet; run it to the end first")
    cells = summarize(records, spec.baseline, [v.name for v in spec.variants()])
    return summary_text(cells, spec.baseline)
