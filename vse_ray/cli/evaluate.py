"""`vse-ray evaluate`: every metric of a run (or of a similarity matrix) on a split, as a JSON report."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from vse_ray.folder_names import DEFAULT_OUTPUT_DIR


def evaluate(
    run: Annotated[str | None, typer.Option(help="MLflow run id, or a checkpoint file/folder.")] = None,
    model: Annotated[
        str | None,
        typer.Option(
            help="Instead of --run: a model as its --set model_params.KEY=VALUE build it, not trained by "
            "vse_ray (clip: a CLIP checkpoint zero-shot)."
        ),
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="With --model: model_params.KEY=VALUE (YAML); repeatable."),
    ] = None,
    image_cache: Annotated[
        bool,
        typer.Option(
            "--image-cache",
            help="With --model: read the image embeddings from the data folder's cache "
            "(image_embeddings/), computing it once with a Ray Data actor pool (GPU when there is one).",
        ),
    ] = False,
    sims: Annotated[
        str | None,
        typer.Option(
            help="Instead of --run: a .npy (n_images, n_captions) similarity matrix to score against --data;"
            " rows: the split's images in stored order, columns: its captions sorted by caption_id."
        ),
    ] = None,
    split: Annotated[str, typer.Option(help="Split to score.")] = "test",
    protocol: Annotated[str, typer.Option(help="full | coco5k | coco1k (5 folds of 1,000 images).")] = "full",
    data: Annotated[str | None, typer.Option(help="Precompute folder (default: the run's).")] = None,
    tracking_uri: Annotated[str | None, typer.Option(help="MLflow URI (default: sqlite in out dir).")] = None,
    output_dir: Annotated[
        str, typer.Option(help="Folder of the default MLflow store and reports.")
    ] = DEFAULT_OUTPUT_DIR,
    coco_ids: Annotated[
        str | None, typer.Option(help="JSON {images: {id: coco_id}, captions: {id: coco_id}}: ECCV metrics.")
    ] = None,
    eval_block: Annotated[
        str | None,
        typer.Option(help="IMAGESxCAPTIONS pairs per block for SCAN/SGRAF scoring (default: fits memory)."),
    ] = None,
    ensemble: Annotated[
        list[str] | None,
        typer.Option(
            help="Another run to average scores with (repeatable): SGRAF* = SGR run + --ensemble SAF run."
        ),
    ] = None,
) -> None:
    """Evaluate a run, a similarity matrix (--sims) or a model as its options build it (--model), on both
    directions with every metric; write a JSON report."""
    if sum(given is not None for given in (run, sims, model)) != 1:
        raise ValueError("evaluate: give exactly one of --run, --sims and --model")
    if run is None and data is None:
        raise ValueError(
            f"evaluate --{'sims' if model is None else 'model'}: --data (the precompute folder) is required"
        )
    if (set_ or image_cache) and model is None:
        raise ValueError("evaluate: --set and --image-cache go with --model (a run's options are its own)")
    model_params = _model_params(str(model), str(data), split, set_ or []) if model is not None else {}
    from vse_ray.log_file import command_log, log_file_line

    with command_log(output_dir) as log:  # MLflow's lines go to the log file
        if model is not None:
            from vse_ray.evaluation.zero_shot import evaluate_model

            report = evaluate_model(
                model,
                model_params,
                str(data),
                split,
                protocol,
                tracking_uri,
                output_dir,
                coco_ids,
                image_cache=image_cache,
            )
        elif run is None:
            from vse_ray.evaluation.sims_file import evaluate_sims

            report = evaluate_sims(str(sims), str(data), split, protocol, output_dir, coco_ids)
        else:
            from vse_ray.evaluation.evaluate import evaluate_run

            report = evaluate_run(
                run, split, protocol, data, tracking_uri, output_dir, coco_ids, eval_block, ensemble
            )
    width = max(len(k) for k in report.metrics)
    for key, value in sorted(report.metrics.items()):
        typer.echo(f"{key:<{width}}  {value:.4f}")
    typer.echo(f"report: {report.path}")
    typer.echo(log_file_line(log))


def _model_params(model: str, data: str, split: str, items: list[str]) -> dict[str, Any]:
    """The `model_params` of ``--set`` items, checked against the model's options and the image input the
    data's split holds (before anything is built)."""
    from vse_ray.train.config import parse_overrides
    from vse_ray.train.model_input import check_split_input

    overrides = parse_overrides(items)
    other = [key for key in overrides if key != "model_params"]
    if other:
        raise ValueError(f"evaluate --model: --set takes model_params.KEY=VALUE, got {other[0]!r}")
    params = overrides.get("model_params") or {}
    if not isinstance(params, dict):
        raise ValueError(f"evaluate --model: --set model_params expects a mapping, got {params!r}")
    from vse_ray.models import model_options

    options = sorted(model_options(model))
    unknown = sorted(set(params) - set(options))
    if unknown:
        raise ValueError(f"--set model_params.{unknown[0]}: not an option of model {model!r} ({options})")
    check_split_input(data, split, model, params)
    return params
