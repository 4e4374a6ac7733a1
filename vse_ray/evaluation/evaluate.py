"""`vse-ray evaluate`: score a trained run on a split (every metric, both directions), report and log it."""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from mlflow import MlflowClient

from vse_ray.arrow_columns import vectors
from vse_ray.checkpoint_files import CHECKPOINT_FILE, load_checkpoint
from vse_ray.data.store.readers import load_captions, relevance_sources, vocab_mismatch
from vse_ray.data.store.shards import sha256_file
from vse_ray.data.store.split_data import SplitData, load_image_store, load_split
from vse_ray.data.store.verify import verify_data_dir
from vse_ray.evaluation.eccv import eccv_positives
from vse_ray.evaluation.embed import ensemble_similarities, scoring_device
from vse_ray.evaluation.examples import plot_retrieval_examples
from vse_ray.evaluation.pair_blocks import parse_block
from vse_ray.evaluation.plots import plot_metric_at_k
from vse_ray.evaluation.protocols import Protocol, caption_vector_column, check_sources, score_images
from vse_ray.folder_names import DEFAULT_OUTPUT_DIR
from vse_ray.metrics import recall_at_k
from vse_ray.metrics.registry import CUTOFFS
from vse_ray.models import rebuild_model
from vse_ray.tracking import get_best_checkpoint, metric_keys, resolve_tracking_uri
from vse_ray.tracking.artifacts import log_figures
from vse_ray.tracking.lifecycle import check_server, prepare_store
from vse_ray.tracking.recorder import RunRecorder, log_metrics
from vse_ray.tracking.runs import CHECKPOINT_ARTIFACT_DIR, get_or_create_experiment
from vse_ray.tracking.tags import RECIPE_TAG
from vse_ray.tracking.uri import local_store

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
    scoring: str = ""  # the protocol in words (`Protocol.describe`)
    paper: dict[str, Any] = dataclasses.field(default_factory=dict)  # `PaperNumbers.beside`, when they match

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


@dataclass(frozen=True)
class PaperNumbers:
    """The numbers a paper reports for a recipe's row, and the protocol and split it scored them with."""

    recipe: str
    protocol: Protocol
    split: str
    reports: dict[str, float]

    def matches(self, protocol: Protocol, split: str) -> bool:
        """Whether an evaluation by ``protocol`` on ``split`` measures what the paper measured."""
        return (self.protocol, self.split) == (protocol, split)

    def beside(self, metrics: dict[str, float]) -> dict[str, Any]:
        """``{"recipe": ..., "numbers": {key: {"run", "paper", "difference"}}}`` for each reported key the
        evaluation has (difference: run - paper)."""
        numbers = {
            key: {"run": metrics[key], "paper": value, "difference": metrics[key] - value}
            for key, value in self.reports.items()
            if key in metrics
        }
        return {"recipe": self.recipe, "numbers": numbers}


def check_protocol(protocol: Protocol, coco_ids: str | None) -> None:
    """ValueError for ECCV Caption's metrics on 1K images (they are defined on the 5K test images: its
    positives span folds)."""
    if coco_ids and protocol.images in ("coco1k", "first1k"):
        raise ValueError(
            "--coco-ids: ECCV Caption's metrics are defined on COCO's 5K test images, not on 1K folds; "
            "use --protocol coco5k (or full) with --coco-ids, and coco1k without it"
        )


def score_split(
    sims: np.ndarray,
    split: SplitData,
    protocol: Protocol,
    metric_kwargs: dict[str, Any],
    data_dir: str | None = None,
    split_name: str = "test",
) -> dict[str, float]:
    """Every metric of `split` under `protocol` (:func:`~vse_ray.evaluation.protocols.score_images`); the
    first-caption CS@K reads the coherence source's caption vectors from ``data_dir``'s ``split_name``."""
    caption_vectors = None
    if protocol.cs_captions == "first":
        if data_dir is None:
            raise ValueError("cs_captions 'first' reads the caption vectors of a data folder")
        caption_vectors = split_caption_vectors(data_dir, split_name, split.caption_ids)
    return score_images(sims, split.img_of_cap, split.relevance, protocol, metric_kwargs, caption_vectors)


def check_split(protocol: Protocol, data_dir: str, split: str) -> None:
    """The data folder's split verified, with the relevance the protocol reads (before anything is scored)."""
    verify_data_dir(data_dir, splits=(split,))
    check_sources(protocol, relevance_sources(data_dir, split), f"{data_dir}: split {split!r}")


def split_caption_vectors(data_dir: str, split: str, caption_ids: np.ndarray) -> np.ndarray:
    """(n_captions, D) vectors of the coherence source for ``caption_ids`` (a split's columns)."""
    column = caption_vector_column()
    table = load_captions(data_dir, split, ["caption_id", column])
    row = {int(c): i for i, c in enumerate(table["caption_id"].to_numpy())}
    return vectors(table[column])[[row[int(c)] for c in caption_ids]]


def score_checkpoint(
    state: dict[str, Any],
    load: Callable[[bool], SplitData],
    protocol: Protocol = Protocol(),
    *,
    members: Sequence[dict[str, Any]] = (),
    block: tuple[int, int] | None = None,
    progress: bool = False,
    coco_ids: str | None = None,
    data_dir: str | None = None,
    split_name: str = "test",
) -> tuple[np.ndarray, SplitData, dict[str, float]]:
    """Rebuild a checkpoint's model and score a split with the run's batch size and metric cut-offs.

    Args:
        state: The checkpoint (`load_checkpoint`); its config is the run's `TrainConfig.to_dict()`.
        load: The split for the model's feature layout: ``load(True)`` raw pixels, ``load(False)`` features.
        protocol: As :func:`score_split`, which reads ``data_dir``'s ``split_name`` for first captions.
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
    return sims, data, score_split(sims, data, protocol, kwargs, data_dir, split_name)


def resolve_protocol(
    options: Mapping[str, str], split: str | None, paper: PaperNumbers | None, as_paper: bool
) -> tuple[Protocol, str]:
    """The protocol and split of an evaluation: the ``options`` given (``Protocol`` fields) over the
    paper's protocol (``as_paper``) or vse_ray's own; the split given, else the paper's, else test.

    Raises:
        ValueError: ``as_paper`` without the numbers of a recipe.
    """
    if as_paper and paper is None:
        raise ValueError(
            "--paper: the run follows no recipe (trained without --recipe); name one with --recipe"
        )
    base = paper.protocol if as_paper and paper else Protocol()
    protocol = dataclasses.replace(base, **options)
    return protocol, split or (paper.split if as_paper and paper else "test")


def evaluate_run(
    run: str,
    split: str | None = None,
    protocol_options: Mapping[str, str] | None = None,
    data_dir: str | None = None,
    tracking_uri: str | None = None,
    output_dir: str = DEFAULT_OUTPUT_DIR,
    coco_ids: str | None = None,
    eval_block: str | None = None,
    ensemble: list[str] | None = None,
    *,
    recipe: str | None = None,
    paper_of: Callable[[str], PaperNumbers] | None = None,
    as_paper: bool = False,
) -> EvaluationReport:
    """Evaluate the best checkpoint of `run` on `split`, write a JSON report and log it to the run.

    Args:
        run: MLflow run id, or a checkpoint file/folder.
        split: Split of the precompute folder to score (default: test, or the paper's with `as_paper`).
        protocol_options: :class:`~vse_ray.evaluation.protocols.Protocol` fields given (``images``: "full",
            "coco5k", "coco1k", "first1k"; ``ncs_reference``; ``cs_captions``); the others are vse_ray's
            own, or the paper's with `as_paper`.
        data_dir: Precompute folder (default: the one the run trained on).
        tracking_uri: MLflow store (default: sqlite in `output_dir`).
        output_dir: Where the JSON report goes (`<output_dir>/reports/`).
        coco_ids: JSON mapping image/caption ids to COCO ids: adds the ECCV Caption metrics.
        eval_block: "IMAGESxCAPTIONS" pairs per block of a similarity model's scoring (default: sized to
            the free memory); refused when it cannot fit.
        ensemble: further runs (ids or checkpoints) whose score matrices are averaged with `run`'s, e.g. the
            SAF run next to an SGR run for SGRAF* (the report and the logged metrics stay with `run`).
        recipe: The recipe whose paper numbers the run is compared with (default: the run's own recipe).
        paper_of: A recipe's paper numbers, by name.
        as_paper: Score by the paper's protocol and split (options given still override).

    The report carries the paper's numbers beside the run's (``paper``) when the recipe's protocol and split
    are those of this evaluation; they are then logged on the run as ``paper/<group>/<key>`` metrics.
    """
    block = parse_block(eval_block) if eval_block else None
    uri = resolve_tracking_uri(tracking_uri, output_dir)
    check_server(uri)  # MLflow itself retries an absent server for minutes
    checkpoint, run_id = resolve_run(run, uri)
    others = [resolve_run(other, uri) for other in ensemble or []]
    members = [path for path, _ in others]
    names = [checkpoint_name(path, run) for path, run in [(checkpoint, run_id), *others]]
    state = load_checkpoint(checkpoint, name=names[0])
    cfg = state["config"]  # the run's TrainConfig.to_dict()
    recipe = recipe or cfg.get("recipe") or None
    paper = paper_of(recipe) if paper_of and recipe else None
    protocol, split = resolve_protocol(protocol_options or {}, split, paper, as_paper)
    check_protocol(protocol, coco_ids)
    data_dir = data_dir or cfg["data_dir"]
    check_split(protocol, data_dir, split)
    states = [state, *(load_checkpoint(m, name=n) for m, n in zip(members, names[1:], strict=True))]
    for name, one in zip(names, states, strict=True):
        args = one["model_args"]
        if args.get("text_encoder") != "bert":  # BERT reads wordpieces of the texts, not the vocabulary
            problem = vocab_mismatch(args["vocab_size"], data_dir, one["model_name"] == "vse_inf")
            if problem:
                raise ValueError(f"{name}: {problem}")
    load = functools.partial(load_split, data_dir, split)
    sims, data, metrics = score_checkpoint(
        state,
        load,
        protocol,
        members=states[1:],
        block=block,
        progress=True,
        coco_ids=coco_ids,
        data_dir=data_dir,
        split_name=split,
    )
    tag = f"_ensemble{len(states)}" if members else ""
    name = f"{run_id or Path(checkpoint).stem}_{split}_{protocol.name}{tag}.json"
    report = write_report(scored(run_id, str(checkpoint), split, protocol, metrics, paper), output_dir, name)
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


def scored(
    run_id: str | None,
    source: str,
    split: str,
    protocol: Protocol,
    metrics: dict[str, float],
    paper: PaperNumbers | None = None,
) -> EvaluationReport:
    """The (unwritten) report of an evaluation: the protocol named and described, and the paper's numbers
    beside the run's when the paper scored by the same protocol on the same split."""
    beside = paper.beside(metrics) if paper and paper.matches(protocol, split) else {}
    if paper and not beside:
        beside = {"recipe": paper.recipe, "other_protocol": f"{paper.split} {paper.protocol.name}"}
    return EvaluationReport(
        run_id, source, split, protocol.name, metrics, Path(), protocol.describe(split), beside
    )


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
    images when there are some) on `recorder`'s run; beside the paper's numbers, those keys of the run and
    the paper's (``paper/<group>/<key>``) as metrics, and the recipe as tag ``vse_ray.recipe``."""
    pixels = data.images.pixels if data.images.raw else _pixels(data_dir, report.split)
    recorder.record_evaluation(report.split, report.protocol, report.to_dict())
    numbers = report.paper.get("numbers") or {}
    if numbers:
        keys = {k: metric_keys.mlflow_key(k, report.split, report.protocol) for k in numbers}
        run = {keys[k]: v["run"] for k, v in numbers.items()}
        paper = {metric_keys.paper_key(keys[k]): v["paper"] for k, v in numbers.items()}
        log_metrics(recorder.client, recorder.run_id, {**run, **paper})
        recorder.client.set_tag(recorder.run_id, RECIPE_TAG, report.paper["recipe"])
    curve = recall_at_k(sims, data.img_of_cap, tuple(k for k in CURVE_KS if k <= min(sims.shape)))
    figures = {
        f"{report.split}_recall_at_k": plot_metric_at_k(curve, "R", f"R@K ({report.split})"),
        f"{report.split}_cs_at_k": plot_metric_at_k(report.metrics, "CS", f"CS@K ({report.split})"),
        f"{report.split}_ncs_at_k": plot_metric_at_k(report.metrics, "NCS", f"NCS@K ({report.split})"),
        **plot_retrieval_examples(sims, data, report.split, pixels),
    }
    log_figures(recorder.client, recorder.run_id, figures, "plots")
