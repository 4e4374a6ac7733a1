"""run_sweep: a Ray Tune sweep over a search space, tracked as an MLflow parent run with nested trial runs."""

from __future__ import annotations

import functools
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml
from mlflow import MlflowClient
from ray import tune
from ray.tune.schedulers import ASHAScheduler, FIFOScheduler
from ray.tune.search import BasicVariantGenerator

from vse_ray.data.store.verify import VerifiedData, verify_data_dir
from vse_ray.tracking import (
    get_or_create_experiment,
    log_epoch_metrics,
    log_params_flat,
)
from vse_ray.tracking import metric_keys as keys
from vse_ray.tracking.filters import tag_equals
from vse_ray.tracking.lifecycle import (
    ConfigRecord,
    claim_run_folder,
    flat,
    keep_config,
    prepare_store_beside,
)
from vse_ray.tracking.recorder import RunRecorder
from vse_ray.tracking.views import comparison_view, save_view, view_url
from vse_ray.train.config import TrainConfig
from vse_ray.train.locked_image import check_cache_input, compute_missing_caches
from vse_ray.tune.mlflow_trials import (
    BEST_METRIC,
    BEST_PARAM,
    PARENT_TAG,
    TRIAL_TAG,
    TUNE_BOOKKEEPING_KEYS,
)
from vse_ray.tune.search_space import SearchSpace, load_search_space
from vse_ray.tune.space_checks import check_search_space, trial_config
from vse_ray.tune.stage_bar import TrialEpochLines
from vse_ray.tune.sweep_config import SweepConfig
from vse_ray.tune.sweep_report import SweepResult, report_document, sweep_summary
from vse_ray.tune.trial import run_trial
from vse_ray.tune.trial_limit import LIMIT_FILE, TrialLimitStopper
from vse_ray.tune.tuner import TuneRun, fit_trials, record_trial, saved_trial_statuses

SPACE_TAG = "vse_ray.search_space"
REPORT_FILE = "sweep_report.json"


def trial_params(config: dict[str, Any], *, space: SearchSpace, base: dict[str, Any]) -> dict[str, Any]:
    """The flat MLflow params of the trial with Tune config ``config``."""
    return trial_config(space, space.overrides(config), base).config.to_flat_dict()


@dataclass(frozen=True)
class CheckedSweep:
    """A sweep whose config, space and data folder passed every check; nothing written yet."""

    cfg: SweepConfig
    space: SearchSpace
    base: dict[str, Any]
    path: Path
    resolved: TrainConfig
    data: VerifiedData


def check_sweep(cfg: SweepConfig) -> CheckedSweep:
    """Check the config, the space and the data folder, writing nothing (a bad input leaves no folder).

    Raises:
        ValueError: for an invalid ``cfg`` or space, an existing sweep folder with ``resume=False``, or a data
            folder that is not a finished precompute or has too few val images.
    """
    cfg.validate()
    space = load_search_space(cfg.space)
    fixed = {
        "data_dir": cfg.data_dir,
        **cfg.train,
        "output_dir": cfg.output_dir,
        "storage_path": cfg.storage_path,
        "tracking_uri": cfg.tracking_uri,
        "experiment": cfg.experiment,
    }
    resolved = trial_config(space, {}, fixed).config.resolved()
    name = cfg.sweep_name()
    path = Path(resolved.filled("storage_path")) / name
    base = {**resolved.to_dict(), "storage_path": str(path / "train_runs")}
    if cfg.trial_mode == "process":  # the trial's own process trains on the GPU share Tune gives it
        base["use_gpu"] = cfg.gpus_per_trial > 0
    base.pop("loss")
    check_search_space(space, base)
    if tune.Tuner.can_restore(path) and not cfg.resume:
        raise ValueError(f"name: sweep {name!r} already exists at {path}; resume it or pick another name")
    data = verify_data_dir(cfg.data_dir)  # a finished precompute that matches its manifest
    data.check_cutoffs("val", base["eval_ks"])  # each epoch of each trial ranks the val images
    if resolved.image_cache:
        check_cache_input(resolved)
    return CheckedSweep(cfg, space, base, path, resolved, data)


def run_sweep(checked: CheckedSweep, *, wait: bool = False, claimed: str = "") -> SweepResult:
    """Claim the sweep `check_sweep` checked, run (or resume) it, log the best trial on the parent run,
    return it.

    Before Ray starts, the sweep is claimed as every run is (:mod:`vse_ray.tracking.lifecycle`): the
    tracking server answers, its folder is locked (one writer; ``wait`` queues behind the holder, until
    this call returns) and a rerun has the config the sweep started with. ``claimed`` is printed then (the
    command's line saying where Ray's and MLflow's logs go); the store is created while Ray starts.

    Raises:
        ValueError: for a sweep in use by another command, another config than the sweep's, or a server
            that does not answer.
    """
    cfg, path, resolved = checked.cfg, checked.path, checked.resolved
    name = path.name
    uri = resolved.filled("tracking_uri")
    what = f"sweep {name!r} ({path})"
    lock = claim_run_folder(path, what, "choose another --name", uri, wait=wait, store=False)
    try:
        keep_config(
            ConfigRecord.of(path),
            _sweep_record(cfg, resolved),
            f"sweep {name!r} in {path.parent}",
            "run it with the config it started with to resume it, or choose another --name",
        )
        if claimed:
            print(claimed, flush=True)
        return _run(cfg, checked.space, checked.base, path, uri, resolved, checked.data)
    finally:
        lock.release()


def _sweep_record(cfg: SweepConfig, resolved: TrainConfig) -> dict[str, Any]:
    """What a sweep computes, as flat keys: its fields (where it writes resolved), the fixed training fields
    and the space's content. A rerun's name, ``resume`` and ``stop_after_trials`` may differ."""
    fields = asdict(cfg)
    for key in ("name", "resume", "stop_after_trials", "space", "train"):
        fields.pop(key)
    where = ("data_dir", "output_dir", "storage_path", "tracking_uri", "experiment")
    fields.update({key: getattr(resolved, key) for key in where})
    space = yaml.safe_load(Path(cfg.space).read_text())
    return flat({**fields, "train": cfg.train, "space": space})


def _run(
    cfg: SweepConfig,
    space: SearchSpace,
    base: dict[str, Any],
    path: Path,
    uri: str,
    resolved: TrainConfig,
    data: VerifiedData,
) -> SweepResult:
    """Run or resume the claimed sweep in ``path``, tracked under its MLflow parent run; Ray starts (joins a
    running cluster, else a local instance that goes away with this process) while the store is created."""
    from vse_ray.ray_session import ensure_ray

    name = path.name
    epochs = int(base["epochs"])
    prepare_store_beside(uri, ensure_ray)
    if resolved.image_cache:
        compute_missing_caches(resolved)  # once for every trial (of the same model_params)
    restoring = tune.Tuner.can_restore(path)
    experiment_id = get_or_create_experiment(resolved.experiment, uri, resolved.output_dir)
    parent, num_samples = _parent_run(experiment_id, name, uri, cfg, space, data)

    trainable = tune.with_parameters(run_trial, space=space, base=base, mode=cfg.trial_mode)
    resources = (
        {"cpu": cfg.cpus_per_trial, "gpu": cfg.gpus_per_trial}
        if cfg.trial_mode == "process"
        else {"cpu": 0.1}
    )
    run = TuneRun(
        name=name,
        storage_path=str(path.parent),
        tracking_uri=uri,
        experiment_id=experiment_id,
        parent_run_id=parent,
        trial_params=functools.partial(trial_params, space=space, base=base),
        resources=resources,
        metric=space.metric,
        mode=space.mode,
        max_failures=int(base.get("max_failures", 0)),
        callbacks=[TrialEpochLines(name, epochs)],  # the console's progress, from Tune's result stream
    )
    TrialLimitStopper.write_limit(path / LIMIT_FILE, cfg.stop_after_trials)
    if restoring:
        print(f"Resuming sweep {name} from {path}", flush=True)
    try:
        results = fit_trials(
            run,
            trainable,
            space.param_space(),
            tune_config=_tune_config(cfg, space, epochs),
            stop=TrialLimitStopper(path / LIMIT_FILE, epochs),
        )
        limited = TrialLimitStopper.reached(path / LIMIT_FILE)
        return _finish(results, num_samples * space.grid_size(), space, base, run, limited)
    except KeyboardInterrupt:  # a Ctrl-C Tune caught (`_finish`)
        RunRecorder(parent, uri).finish("KILLED", "interrupted")
        raise
    except Exception:  # a full disk (`fit_trials`): the rerun resumes
        RunRecorder(parent, uri).finish("FAILED", "error")
        raise


def save_sweep_view(run: TuneRun, space: SearchSpace) -> str:
    """The MLflow view of a sweep's trials: one row per trial with its searched params, the best validation
    rsum first; returns its key."""
    headline = [keys.mlflow_key(k) for k in keys.HEADLINE]
    state = comparison_view(
        tag_equals(PARENT_TAG, run.parent_run_id),
        [keys.BEST_RSUM, *headline, keys.TEST_RSUM],
        keys.BEST_RSUM,
        params=list(dict.fromkeys(["loss", *sorted(space.tuned_params())])),
    )
    return save_view(run.tracking_uri, run.experiment_id, state)


def _parent_run(
    experiment_id: str, name: str, uri: str, cfg: SweepConfig, space: SearchSpace, data: VerifiedData
) -> tuple[str, int]:
    """The sweep's parent run and the trials it samples: a new run records ``cfg``'s plan, a resumed one
    keeps the plan it started with (a restored Tuner samples as first set up)."""
    parent = RunRecorder.open(experiment_id, name, uri).run_id
    client = MlflowClient(uri)
    logged = client.get_run(parent).data.params
    if logged:
        return parent, int(logged["sweep.num_samples"])
    log_params_flat(
        {
            "sweep.space": str(Path(cfg.space).resolve()),
            "sweep.loss": space.loss,
            "sweep.metric": space.metric,
            "sweep.mode": space.mode,
            "sweep.num_samples": cfg.num_samples,
            "sweep.scheduler": cfg.scheduler,
            "sweep.trial_mode": cfg.trial_mode,
            "sweep.seed": cfg.seed,
            **data.mlflow_params(),
        },
        parent,
        uri,
    )
    client.set_tag(parent, SPACE_TAG, Path(cfg.space).read_text()[:5000])
    return parent, cfg.num_samples


def _tune_config(cfg: SweepConfig, space: SearchSpace, epochs: int) -> tune.TuneConfig:
    scheduler = (
        ASHAScheduler(
            time_attr="training_iteration",
            max_t=epochs,
            grace_period=min(cfg.grace_period, epochs),
            reduction_factor=cfg.reduction_factor,
        )
        if cfg.scheduler == "asha"
        else FIFOScheduler()
    )
    return tune.TuneConfig(
        metric=space.metric,
        mode=space.mode,
        num_samples=cfg.num_samples,
        scheduler=scheduler,
        search_alg=BasicVariantGenerator(max_concurrent=cfg.max_concurrent, random_state=cfg.seed),
    )


def _finish(
    results: tune.ResultGrid,
    planned: int,
    space: SearchSpace,
    base: dict[str, Any],
    run: TuneRun,
    limited: bool,
) -> SweepResult:
    """Record the ended trials and the best one, close the parent run, save the report, print the screen.

    A run that stopped early without reaching its trial limit (``limited``) was stopped by Ctrl-C: Tune
    caught it, saved its state and returned. The ended trials are recorded, then a KeyboardInterrupt ends
    the parent run KILLED (:func:`_run`) and reaches the command (one line saying how to resume).
    """
    statuses = saved_trial_statuses(run.path)  # not `results`: an interrupted run marks stopped trials ended
    ended = sum(status in ("TERMINATED", "ERROR") for status in statuses.values())
    # each ended trial keeps its best checkpoint on its run (`evaluate --run`); ray's stub gives a ResultGrid
    # no __iter__, so it is indexed
    for index in range(len(results)):
        result = results[index]
        trial_id = (result.metrics or {}).get("trial_id")
        if trial_id is not None and statuses.get(trial_id) == "TERMINATED" and result.best_checkpoints:
            record_trial(run, result)
    finished = len(statuses) == planned and ended == planned
    if not finished and not limited:
        raise KeyboardInterrupt(f"sweep {run.name} stopped by Ctrl-C")
    best = _best_trial(results, space, base)
    if best["best_trial_id"] is not None:
        best["best_run_id"] = _record_best(run, best)
    stop = ("FINISHED", "completed") if finished else ("KILLED", "interrupted")
    RunRecorder(run.parent_run_id, run.tracking_uri).finish(*stop)
    view = save_sweep_view(run, space)
    sweep = SweepResult(
        name=run.name,
        path=str(run.path),
        finished=finished,
        num_trials=planned,
        num_ended=ended,
        num_errors=results.num_errors,
        parent_run_id=run.parent_run_id,
        experiment_id=run.experiment_id,
        tracking_uri=run.tracking_uri,
        runs_url=view_url(run.tracking_uri, run.experiment_id, view),
        charts_url=view_url(run.tracking_uri, run.experiment_id, view, chart=True),
        **best,
    )
    _save_report(sweep, run)
    print(sweep_summary(sweep, space))
    return sweep


def _record_best(run: TuneRun, best: dict[str, Any]) -> str | None:
    """Log the best trial's config, metrics and ids on the parent run; return the trial's MLflow run id."""
    uri, parent = run.tracking_uri, run.parent_run_id
    client = MlflowClient(uri)
    runs = client.search_runs(
        [run.experiment_id], tag_equals(TRIAL_TAG, best["best_trial_id"]), max_results=1
    )
    best_run_id = runs[0].info.run_id if runs else None
    # Tags, not params: a resumed sweep may end with another best trial, and MLflow params never change.
    for key, value in best["best_config"].items():
        client.set_tag(parent, f"{BEST_PARAM}{key}", str(value)[:5000])
    log_epoch_metrics([best["best_metrics"]], parent, uri, prefix=BEST_METRIC)
    for key, value in (
        ("best_trial_id", best["best_trial_id"]),
        ("best_run_id", best_run_id),
        ("best_checkpoint", best["best_checkpoint"]),
    ):
        client.set_tag(parent, f"vse_ray.{key}", value or "")
    return best_run_id


def _save_report(sweep: SweepResult, run: TuneRun) -> None:
    """Write the JSON report into the sweep folder and log it on the parent run; sets ``sweep.report``."""
    document = report_document(sweep)
    sweep.report = str(run.path / REPORT_FILE)
    Path(sweep.report).write_text(json.dumps(document, indent=2, sort_keys=True, default=str) + "\n")
    MlflowClient(run.tracking_uri).log_dict(run.parent_run_id, document, REPORT_FILE)


def _best_trial(results: tune.ResultGrid, space: SearchSpace, base: dict[str, Any]) -> dict[str, Any]:
    """Best trial by its best epoch (VSE++ keeps the best validation snapshot), its metrics and checkpoint."""
    best: dict[str, Any] = {
        "best_trial_id": None,
        "best_config": {},
        "best_metrics": {},
        "best_checkpoint": None,
        "best_run_id": None,
    }
    try:
        result = results.get_best_result(space.metric, space.mode, scope="all")
    except RuntimeError:
        return best
    history = result.metrics_dataframe
    if history is None or space.metric not in history:
        return best
    row = history.loc[
        history[space.metric].idxmax() if space.mode == "max" else history[space.metric].idxmin()
    ]
    metrics = {k: row[k] for k in history.columns if "/" not in k and k not in TUNE_BOOKKEEPING_KEYS}
    sign = 1.0 if space.mode == "max" else -1.0
    kept = [(c, m) for c, m in result.best_checkpoints or [] if space.metric in m]
    checkpoint = max(kept, key=lambda item: sign * item[1][space.metric])[0] if kept else result.checkpoint
    best.update(
        best_trial_id=str(row["trial_id"]),
        best_config=trial_params(result.config or {}, space=space, base=base),
        best_metrics={k: v.item() if hasattr(v, "item") else v for k, v in metrics.items()},
        best_checkpoint=metrics.get("checkpoint_path")
        or (checkpoint.path if checkpoint is not None else None),
    )
    return best
