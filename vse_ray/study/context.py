"""What the stages of a study share: its context and MLflow parent run, run names, timing, Tune stages."""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vse_ray.study.spec import StudySpec, Variant
from vse_ray.study.summary import BASELINE_TAG, SummaryCell
from vse_ray.tracking import get_or_create_experiment, resolve_tracking_uri
from vse_ray.tracking.recorder import RunRecorder
from vse_ray.train.config import TrainConfig
from vse_ray.tune.stage_bar import StageEpochsBar
from vse_ray.tune.trial import NAMED_TRIAL_KEY, named_grid, run_named_trial
from vse_ray.tune.tuner import TuneRun, fit_trials, saved_trial_statuses


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

    def resolved(self, cfg: TrainConfig) -> TrainConfig:
        """``cfg`` writing into the study's output folder, MLflow store and experiment."""
        return dataclasses.replace(
            cfg,
            output_dir=str(self.out),
            tracking_uri=self.tracking_uri,
            experiment=experiment_name(self.spec),
        ).resolved()

    def fit_stage(
        self, stage: str, label: str, configs: dict[str, TrainConfig], epochs: int, cpus: float | None = None
    ) -> tuple[TuneRun, Any]:
        """Train one stage's trials (one per named config) through the one Tune driver; returns its run and
        its Tune results (a ResultGrid), every trial ended with a checkpoint (else :func:`check_stage` raises,
        naming the stage as ``label``).

        ``epochs``: the stage's epochs over all its trials (the progress bar's total); ``cpus``: CPUs per
        trial (default: the study's ``resources.cpus_per_trial``)."""
        from ray import tune

        dicts = {name: cfg.to_dict() for name, cfg in configs.items()}
        run = self._tune_run(stage, dicts, epochs, cpus)
        trainable = tune.with_parameters(run_named_trial, configs=dicts)
        results = fit_trials(run, trainable, named_grid(configs), tune_config=self._tune_config())
        check_stage(results, label, saved_trial_statuses(run.path), len(configs))
        return run, results

    def _tune_run(
        self, stage: str, dicts: dict[str, dict[str, Any]], epochs: int, cpus: float | None
    ) -> TuneRun:
        """The Tune run of one stage: one trial per named config, MLflow child runs named like them."""
        res = self.spec.resources
        cpus = float(res.get("cpus_per_trial", 1)) if cpus is None else cpus
        resources = {"cpu": cpus, "gpu": float(res.get("gpus_per_trial", 0))}
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

    def _tune_config(self) -> Any:
        """At most `resources.concurrent` trials at once (0: as resources allow), reusing trial processes."""
        from ray import tune

        concurrent = int(self.spec.resources.get("concurrent", 0))
        return tune.TuneConfig(max_concurrent_trials=concurrent or None, reuse_actors=True)


@dataclass(frozen=True)
class TrainedRun:
    """One trained run of the study's training stage: where it sits in the table, its MLflow run, its best
    checkpoint and every epoch's validation metrics (the shared warm-up's epochs first)."""

    row: str
    seed: int
    train_images: int
    run_id: str
    checkpoint: Any  # a ray.tune.Checkpoint
    history: list[dict[str, Any]]


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


@dataclass
class StageClock:
    """Seconds per stage of one study (and ``total`` since the clock started), each printed as it ends."""

    study: str
    seconds: dict[str, float] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time the block as stage ``name`` (a block that raises records nothing)."""
        started = time.perf_counter()
        yield
        self.seconds[name] = time.perf_counter() - started
        print(f"[{self.study}] {name}: {self.seconds[name]:.0f} s", flush=True)

    def stop(self) -> None:
        """Record ``total``: the seconds since the clock started."""
        self.seconds["total"] = time.perf_counter() - self.started


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


def open_study(
    spec: StudySpec, output_dir: str | Path, data_dir: str, seconds: dict[str, float]
) -> StudyContext:
    """Experiment `study-<name>` and the study's parent run (found again on a rerun); ``seconds``: the
    study's seconds per stage, shared with its :class:`StageClock`."""
    out = Path(output_dir).expanduser().resolve()
    uri = resolve_tracking_uri(None, out)
    experiment_id = get_or_create_experiment(experiment_name(spec), uri, out)
    params = {"study.source": spec.source, "study.baseline": spec.baseline, "study.seeds": spec.seeds}
    parent = RunRecorder.open(experiment_id, spec.name, uri, params, {BASELINE_TAG: spec.baseline})
    if not parent.client.list_artifacts(parent.run_id, "study.json"):
        described = {k: v for k, v in dataclasses.asdict(spec).items() if k != "source"}
        parent.client.log_dict(parent.run_id, described, "study.json")
    return StudyContext(spec, out, data_dir, uri, experiment_id, parent.run_id, seconds)


def check_stage(results: Any, stage: str, statuses: dict[str, str], planned: int) -> None:
    """Raise for a stage whose trials failed, or that Tune ended early, as KeyboardInterrupt (which the CLI
    reports with its resume hint).

    On Ctrl-C Tune stops the trials, saves its state and returns: the stage ended early when that state
    (``statuses``: :func:`~vse_ray.tune.tuner.saved_trial_statuses`) holds fewer than ``planned`` ended
    trials. ``results`` cannot tell: an interrupted fit marks its stopped trials ended, keeps the
    checkpoints they had, and leaves out the trials not yet started.
    """
    errors = [r for r in results if r.error is not None]
    if errors:
        names = ", ".join(str(r.config.get(NAMED_TRIAL_KEY)) for r in errors)
        raise RuntimeError(f"{stage}: trial(s) {names} failed: {errors[0].error}") from errors[0].error
    ended = sum(status == "TERMINATED" for status in statuses.values())
    if ended < planned or any(r.checkpoint is None for r in results):
        raise KeyboardInterrupt(f"{stage}: stopped after {ended} of {planned} trials")
