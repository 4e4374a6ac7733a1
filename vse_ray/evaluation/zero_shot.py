"""`vse-ray evaluate --model NAME --set model_params.KEY=VALUE`: score a model as its options build it,
with no training run (a CLIP checkpoint zero-shot), through the same split scoring, report and MLflow view as
``--run`` and ``--sims``.

The report goes to ``<output_dir>/reports/<model>-<hash>_<split>_<protocol>.json`` and the run to the MLflow
experiment :data:`ZERO_SHOT_EXPERIMENT`, named like the report, with the model's name and options as its
parameters; the hash is of the options and the files they name (`model_label`), so other weights, or weights
rewritten in place, get a report and a run of their own.
"""

from __future__ import annotations

import json
from typing import Any

from vse_ray.data.store.readers import load_manifest, load_vocab
from vse_ray.data.store.split_data import load_split
from vse_ray.evaluation.eccv import eccv_positives
from vse_ray.evaluation.embed import scoring_device, split_similarities
from vse_ray.evaluation.evaluate import (
    EvaluationReport,
    PaperNumbers,
    check_protocol,
    check_split,
    log_evaluation,
    named_run,
    score_split,
    scored,
    write_report,
)
from vse_ray.evaluation.image_cache import cached_images, model_label
from vse_ray.evaluation.protocols import Protocol
from vse_ray.folder_names import DEFAULT_OUTPUT_DIR
from vse_ray.models import build_model
from vse_ray.tracking import resolve_tracking_uri
from vse_ray.tracking.lifecycle import check_server, prepare_store

ZERO_SHOT_EXPERIMENT = "zero_shot"


def evaluate_model(
    model: str,
    model_params: dict[str, Any],
    data_dir: str,
    split: str = "test",
    protocol: Protocol = Protocol(),
    tracking_uri: str | None = None,
    output_dir: str = DEFAULT_OUTPUT_DIR,
    coco_ids: str | None = None,
    batch_size: int = 128,
    image_cache: bool = False,
    paper: PaperNumbers | None = None,
) -> EvaluationReport:
    """Build `model` with `model_params` (and the data's vocabulary size and feature width), score `split` of
    `data_dir` with every metric (default cut-offs, as ``--sims``), write the JSON report and log a run.

    Every input is checked, and the model built, before Ray or MLflow start: a bad option, a missing or
    unreadable checkpoint stops with one line. With `image_cache`, the images are encoded by the cache of
    :mod:`vse_ray.evaluation.image_cache` (computed first, on Ray, when the data folder has none yet).
    """
    check_protocol(protocol, coco_ids)
    check_split(protocol, data_dir, split)
    shape = load_manifest(data_dir).get("dims", {}).get("feature_shape", [0])
    vocab_size = max(load_vocab(data_dir).values()) + 1
    built = build_model(model, vocab_size=vocab_size, feature_dim=int(shape[-1]), **model_params)
    label = model_label(model, model_params)
    uri = resolve_tracking_uri(tracking_uri, output_dir)
    check_server(uri)  # MLflow itself retries an absent server for minutes
    device = scoring_device()
    if image_cache:
        store = cached_images(data_dir, split, model, model_params, label, batch_size)
        data = load_split(data_dir, split, raw=False, image_store=store)
    else:
        data = load_split(data_dir, split, raw=built.feature_layout == "pixels")
    sims = split_similarities(built.to(device), data, batch_size, device, progress=True)
    kwargs: dict[str, Any] = {}
    if coco_ids:
        kwargs["eccv_positives"] = eccv_positives(coco_ids, data.images.image_ids, data.caption_ids)
    metrics = score_split(sims, data, protocol, kwargs, data_dir, split)
    source = f"{model} {json.dumps(model_params, sort_keys=True, default=str)}"
    report = scored(None, source, split, protocol, metrics, paper)
    report = write_report(report, output_dir, f"{label}_{split}_{protocol.name}.json")
    prepare_store(uri)
    params = {
        "model": model,
        **{f"model_params.{k}": v for k, v in model_params.items()},
        "data_dir": data_dir,
    }
    recorder = named_run(uri, output_dir, ZERO_SHOT_EXPERIMENT, label, params)
    log_evaluation(recorder, report, sims, data, data_dir)
    recorder.finish()
    return report
