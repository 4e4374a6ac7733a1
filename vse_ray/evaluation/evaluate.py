"""`vse-ray evaluate`: score a trained run on a split (every metric, both directions), report and log it."""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from mlflow import MlflowClient

from vse_ray.checkpoint_files import CHECKPOINT_FILE, load_checkpoint
from vse_ray.data.store.readers import vocab_mismatch
from vse_ray.data.store.shards import sha256_file
from vse_ray.data.store.split_data import SplitData, load_image_store, load_split
from vse_ray.data.store.verify import verify_data_dir
from vse_ray.evaluation.eccv import eccv_positives
from vse_ray.evaluation.embed import ensemble_similarities, scoring_device
from vse_ray.evaluation.examples import plot_retrieval_examples
from vse_ray.evaluation.pair_blocks import parse_block
from vse_ray.evaluation.plots import plot_metric_at_k
from vse_ray.folder_names import DEFAULT_OUTPUT_DIR
from vse_ray.metrics import coco_1k_folds, evaluate_all, mean_over_folds, recall_at_k
from vse_ray.metrics.registry import CUTOFFS
from vse_ray.models import rebuild_model
from vse_ray.tracking import get_best_checkpoint, resolve_tracking_uri
from vse_ray.tracking.artifacts import log_figures
from vse_ray.tracking.lifecycle import check_server, prepare_store
from vse_ray.tracking.recorder import RunRecorder
from vse_ray.tracking.runs import CHECKPOINT_ARTIFACT_DIR, get_or_create_experiment
from vse_ray.tracking.uri import local_store

PROTOCOLS = ("full", "coco1k", "coco5k")
# The MLflow experiment of evaluations of a checkpoint file (an imported model, a copied checkpoint): one run
# per checkpoint, named after it; a run id given to `evaluate` logs to that run instead.
CHECKPOINT_EXPERIMENT = "checkpoints"
CURVE_KS = (1, 2, 3, 5, 10, 20, 50, 100)


@dataclass
class EvaluationReport:
    """Result of one evaluation: where it came from and every metric."""

    run_id: str | None
    checkpoint: str
    split: str
    protocol: str
    metrics: dict[str, float]
    path: Path

    def to_dict(self) -> dict[str, Any]:
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(self).items()}


def resolve_run(run: str, tracking_uri: str) -> tuple[Path, str | None]:
    """`run` is a checkpoint file/folder, or an MLflow run id whose best checkpoint is downloaded."""
    path = Path(run).expanduser()
    if path.exists():
        return path.resolve(), None
    store = local_store(tracking_uri)
    if store is not None and not store.is_file():
        raise ValueError(f"run: {run!r} is neither a checkpoint path nor a run id (no MLflow store {store})")
    try:
        MlflowClient(tracking_uri).get_run(run)
    except Exception as err:
        raise ValueError(f"run: {run!r} is neither a checkpoint path nor a run id in {tracking_uri}") from err
    return get_best_checkpoint(run, tracking_uri), run


def checkpoint_name(path: Path, run_id: str | None) -> str:
    """How messages name a checkpoint: its path, or the run's artifact (an MLflow download folder is
    temporary, so its path tells the user nothing)."""
    if run_id is None:
        return f"checkpoint {path}"
    return f"run {run_id}: artifact {CHECKPOINT_ARTIFACT_DIR}/{CHECKPOINT_FILE}"


def check_protocol(protocol: str, coco_ids: str | None) -> None:
    """ValueError for an unknown protocol, or for ECCV Caption's metrics on 1K folds (they are defined on
    the 5K test images: its positives span folds)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol: must be one of {PROTOCOLS}, got {protocol!r}")
    if coco_ids and protocol == "coco1k":
        raise ValueError(
            "--coco-ids: ECCV Caption's metrics are defined on COCO's 5K test images, not on 1K folds; "
            "use --protocol coco5k (or full) with --coco-ids, and coco1k without it"
        )


def score_split(
    sims: np.ndarray, split: SplitData, protocol: str, metric_kwargs: dict[str, Any]
) -> dict[str, float]:
    """evaluate_all on the whole split (full/coco5k) or averaged over 5 folds of 1,000 images (coco1k)."""
    if protocol == "coco5k" and sims.shape[0] != 5000:
        raise ValueError(
            f"protocol 'coco5k' needs the 5,000-image COCO test split, got {sims.shape[0]} images"
        )
    if protocol == "coco1k":
        if sims.shape[0] != 5000:
            raise ValueError(f"protocol 'coco1k' needs the 5,000-image COCO test split, got {sims.shape[0]}")
        folds = coco_1k_folds(sims, split.img_of_cap, split.relevance)
        return mean_over_folds([evaluate_all(s, i, r or None, **metric_kwargs) for s, i, r in folds])
    return evaluate_all(sims, split.img_of_cap, split.relevance or None, **metric_kwargs)


def score_checkpoint(
    state: dict[str, Any],
    load: Callable[[bool], SplitData],
    protocol: str = "full",
    *,
    members: Sequence[dict[str, Any]] = (),
    block: tuple[int, int] | None = None,
    progress: bool = False,
    coco_ids: str | None = None,
) -> tuple[np.ndarray, SplitData, dict[str, float]]:
    """Rebuild a checkpoint's model and score a split with the run's batch size and metric cut-offs.

    Args:
        state: The checkpoint (`load_checkpoint`); its config is the run's `TrainConfig.to_dict()`.
        load: The split for the model's feature layout: ``load(True)`` raw pixels, ``load(False)`` features.
        protocol: As :func:`score_split`.
        members: Further checkpoints whose score matrices are averaged with ``state``'s (an ensemble).
        block / progress: A similarity model's pair blocks and progress bar (:func:`ensemble_similarities`).
        coco_ids: JSON mapping image/caption ids to COCO ids: adds the ECCV Caption metrics.

    Returns:
        The (mean) score matrix, the split and every metric.
    """
    cfg = state["config"]
    device = scoring_device()
    models = [rebuild_model(s).to(device) for s in (state, *members)]
    data = load(models[0].feature_layout == "pixels")
    sims = ensemble_similarities(models, data, cfg["eval_batch_size"], device, block, progress)
    kwargs: dict[str, Any] = {field: tuple(cfg[field]) for field in CUTOFFS}  # the run's cut-offs
    if coco_ids:
        kwargs["eccv_positives"] = eccv_positives(coco_ids, data.images.image_ids, data.caption_ids)
    return sims, data, score_split(sims, data, protocol, kwargs)


def evaluate_run(
    run: str,
    split: str = "test",
    protocol: str = "full",
    data_dir: str | None = None,
    tracking_uri: str | None = None,
    output_dir: str = DEFAULT_OUTPUT_DIR,
    coco_ids: str | None = None,
    eval_block: str | None = None,
    ensemble: list[str] | None = None,
) -> EvaluationReport:
    """Evaluate the best checkpoint of `run` on `split`, write a JSON report and log it to the run.

    Args:
        run: MLflow run id, or a checkpoint file/folder.
        split: Split of the precompute folder to score.
        protocol: "full" (whole split), "coco5k" or "coco1k" (COCO test: 5 folds of 1,000 images).
        data_dir: Precompute folder (default: the one the run trained on).
        tracking_uri: MLflow store (default: sqlite in `output_dir`).
        output_dir: Where the JSON report goes (`<output_dir>/reports/`).
        coco_ids: JSON mapping image/caption ids to COCO ids: adds the ECCV Caption metrics.
        eval_block: "IMAGESxCAPTIONS" pairs per block of a similarity model's scoring (default: sized to
            the free memory); refused when it cannot fit.
        ensemble: further runs (ids or checkpoints) whose score matrices are averaged with `run`'s, e.g. the
            SAF run next to an SGR run for SGRAF* (the report and the logged metrics stay with `run`).
    """
    check_protocol(protocol, coco_ids)
    block = parse_block(eval_block) if eval_block else None
    uri = resolve_tracking_uri(tracking_uri, output_dir)
    check_server(uri)  # MLflow itself retries an absent server for minutes
    checkpoint, run_id = resolve_run(run, uri)
    others = [resolve_run(other, uri) for other in ensemble or []]
    members = [path for path, _ in others]
    names = [checkpoint_name(path, run) for path, run in [(checkpoint, run_id), *others]]
    state = load_checkpoint(checkpoint, name=names[0])
    cfg = state["config"]  # the run's TrainConfig.to_dict()
    data_dir = data_dir or cfg["data_dir"]
    verify_data_dir(data_dir, splits=(split,))
    states = [state, *(load_checkpoint(m, name=n) for m, n in zip(members, names[1:], strict=True))]
    for name, one in zip(names, states, strict=True):
        args = one["model_args"]
        if args.get("text_encoder") != "bert":  # BERT reads wordpieces of the texts, not the vocabulary
            problem = vocab_mismatch(args["vocab_size"], data_dir, one["model_name"] == "vse_inf")
            if problem:
                raise ValueError(f"{name}: {problem}")
    load = functools.partial(load_split, data_dir, split)
    sims, data, metrics = score_checkpoint(
        state, load, protocol, members=states[1:], block=block, progress=True, coco_ids=coco_ids
    )
    tag = f"_ensemble{len(states)}" if members else ""
    name = f"{run_id or Path(checkpoint).stem}_{split}_{protocol}{tag}.json"
    report = write_report(
        EvaluationReport(run_id, str(checkpoint), split, protocol, metrics, Path()), output_dir, name
    )
    if not members:  # an ensemble's numbers are not the run's own
        if run_id is None:
            prepare_store(uri)  # a checkpoint's run may be the store's first: created under its lock
        recorder = (
            RunRecorder(run_id, uri) if run_id else _checkpoint_run(uri, output_dir, Path(checkpoint), state)
        )
        log_evaluation(recorder, report, sims, data, data_dir)
        if run_id is None:
            recorder.finish()
    return report


def write_report(report: EvaluationReport, output_dir: str, name: str) -> EvaluationReport:
    """`report` written as JSON to ``<output_dir>/reports/<name>`` (its `path` set to that file)."""
    path = Path(output_dir).expanduser().resolve() / "reports" / name
    report = dataclasses.replace(report, path=path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.to_dict(), indent=2))
    return report


def named_run(
    uri: str, output_dir: str, experiment_name: str, name: str, params: dict[str, Any]
) -> RunRecorder:
    """The run `name` of `experiment_name` (each created when missing; a new run logs `params`)."""
    experiment = get_or_create_experiment(experiment_name, uri, output_dir)
    return RunRecorder.open(experiment, name, uri, params)


def _checkpoint_run(uri: str, output_dir: str, checkpoint: Path, state: dict[str, Any]) -> RunRecorder:
    """The run of `checkpoint` in :data:`CHECKPOINT_EXPERIMENT`, named after its folder (or file) and the
    first digits of its sha256, created with the model's name, arguments and origin as parameters."""
    file = checkpoint / CHECKPOINT_FILE if checkpoint.is_dir() else checkpoint
    name = f"{checkpoint.stem}-{sha256_file(file)[:8]}"
    origin = state.get("imported_from", {})
    params = {"model": state["model_name"], **state["model_args"], "checkpoint": str(file)}
    params.update({f"imported_{k}": v for k, v in origin.items()})
    return named_run(uri, output_dir, CHECKPOINT_EXPERIMENT, name, params)


def _pixels(data_dir: str, split: str) -> np.ndarray | None:
    """The split's stored images, aligned with its features, when precompute kept them."""
    try:
        return load_image_store(data_dir, split, raw=True).pixels
    except (ValueError, KeyError):
        return None


def log_evaluation(
    recorder: RunRecorder, report: EvaluationReport, sims: np.ndarray, data: SplitData, data_dir: str
) -> None:
    """The report's metrics, its R@K / CS@K / NCS@K curves and retrieval examples (with the split's stored
    images when there are some) on `recorder`'s run."""
    pixels = data.images.pixels if data.images.raw else _pixels(data_dir, report.split)
    recorder.record_evaluation(report.split, report.protocol, report.to_dict())
    curve = recall_at_k(sims, data.img_of_cap, tuple(k for k in CURVE_KS if k <= min(sims.shape)))
    figures = {
        f"{report.split}_recall_at_k": plot_metric_at_k(curve, "R", f"R@K ({report.split})"),
        f"{report.split}_cs_at_k": plot_metric_at_k(report.metrics, "CS", f"CS@K ({report.split})"),
        f"{report.split}_ncs_at_k": plot_metric_at_k(report.metrics, "NCS", f"NCS@K ({report.split})"),
        **plot_retrieval_examples(sims, data, report.split, pixels),
    }
    log_figures(recorder.client, recorder.run_id, figures, "plots")
