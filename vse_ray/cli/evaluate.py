"""`vse-ray evaluate`: every metric of a run (or of a similarity matrix) on a split, as a JSON report."""

from __future__ import annotations

from typing import Annotated

import typer

from vse_ray.folder_names import DEFAULT_OUTPUT_DIR


def evaluate(
    run: Annotated[str | None, typer.Option(help="MLflow run id, or a checkpoint file/folder.")] = None,
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
    """Evaluate a run, or a similarity matrix (--sims), on both directions with every metric; write a JSON
    report."""
    if (run is None) == (sims is None):
        raise ValueError("evaluate: give exactly one of --run and --sims")
    if run is None and data is None:
        raise ValueError("evaluate --sims: --data (the precompute folder the matrix scores) is required")
    from vse_ray.log_file import command_log, log_file_line

    with command_log(output_dir) as log:  # MLflow's lines go to the log file
        if run is None:
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
