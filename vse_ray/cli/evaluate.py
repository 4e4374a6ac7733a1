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
    split: Annotated[
        str | None, typer.Option(help="Split to score (default: test; with --paper, the paper's).")
    ] = None,
    protocol: Annotated[
        str | None,
        typer.Option(
            help="Images: full | coco5k | coco1k (the mean over 5 folds of 1,000) | first1k (the first 1,000 "
            "images, once). Default: full, or the paper's with --paper."
        ),
    ] = None,
    ncs_reference: Annotated[
        str | None,
        typer.Option(
            help="The relevance NCS@K reads: cider (default) | spice (SAM's tables; needs it stored)."
        ),
    ] = None,
    cs_captions: Annotated[
        str | None,
        typer.Option(
            help="CS@K over: all captions (default) | first (each image against its first caption, "
            "caption-caption relevance: the ladder code's doTau)."
        ),
    ] = None,
    paper: Annotated[
        bool,
        typer.Option(
            "--paper",
            help="Score as the paper of the run's recipe scored its numbers (docs/recipes.md) and print them "
            "beside the run's.",
        ),
    ] = False,
    recipe: Annotated[
        str | None,
        typer.Option(
            help="The recipe whose paper numbers to compare with (implies --paper; default: the run's)."
        ),
    ] = None,
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
    given = {"images": protocol, "ncs_reference": ncs_reference, "cs_captions": cs_captions}
    options = {k: v for k, v in given.items() if v is not None}
    from vse_ray.evaluation.evaluate import resolve_protocol
    from vse_ray.train.paper_rows import paper_numbers

    as_paper = paper or recipe is not None
    if run is None:  # the recipe, if any, is named here
        if paper and recipe is None:
            raise ValueError("evaluate --paper: with --sims or --model, name the recipe with --recipe")
        numbers = paper_numbers(recipe) if recipe else None
        chosen, split = resolve_protocol(options, split, numbers, as_paper)
    else:
        chosen = None  # the run's recipe is known once its checkpoint is read
    model_params = (
        _model_params(str(model), str(data), split or "test", set_ or []) if model is not None else {}
    )
    from vse_ray.log_file import command_log, log_file_line

    with command_log(output_dir) as log:  # MLflow's lines go to the log file
        if model is not None and chosen is not None:
            from vse_ray.evaluation.zero_shot import evaluate_model

            report = evaluate_model(
                model,
                model_params,
                str(data),
                str(split),
                chosen,
                tracking_uri,
                output_dir,
                coco_ids,
                image_cache=image_cache,
                paper=numbers,
            )
        elif run is None and chosen is not None:
            from vse_ray.evaluation.sims_file import evaluate_sims

            report = evaluate_sims(str(sims), str(data), str(split), chosen, output_dir, coco_ids, numbers)
        else:
            from vse_ray.evaluation.evaluate import evaluate_run

            report = evaluate_run(
                str(run),
                split,
                options,
                data,
                tracking_uri,
                output_dir,
                coco_ids,
                eval_block,
                ensemble,
                recipe=recipe,
                paper_of=paper_numbers,
                as_paper=as_paper,
            )
    width = max(len(k) for k in report.metrics)
    for key, value in sorted(report.metrics.items()):
        typer.echo(f"{key:<{width}}  {value:.4f}")
    typer.echo(f"scored on {report.scoring} (protocol {report.protocol})")
    typer.echo(paper_lines(report.paper))
    typer.echo(f"report: {report.path}")
    typer.echo(log_file_line(log))


BESIDE = {"run": "run", "paper": "paper", "run - paper": "difference"}  # column title -> the report's field


def paper_lines(paper: dict[str, Any]) -> str:
    """The paper's numbers beside the run's (a table), or a line saying why they are not shown."""
    if not paper:
        return "the run follows no recipe: no paper numbers to compare with"
    if "other_protocol" in paper:
        return (
            f"recipe {paper['recipe']}: its paper scored on {paper['other_protocol']}, not this protocol; "
            "`--paper` scores it so, beside the paper's numbers"
        )
    from vse_ray.reporting import Column, metric_number, render_table

    rows = [
        {
            "metric": key,
            **{name: metric_number(n[field], key) for name, field in BESIDE.items()},
        }
        for key, n in paper["numbers"].items()
    ]
    columns = [Column("metric"), *(Column(name, numeric=True) for name in BESIDE)]
    head = f"beside the paper's numbers (recipe {paper['recipe']}, the same protocol):"
    return head + "\n" + render_table(rows, columns, fmt="text", width=None)


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
