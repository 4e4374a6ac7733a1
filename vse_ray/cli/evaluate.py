"""`vse-ray evaluate`: every metric of a trained run on a split, as a JSON report logged to the run."""

from __future__ import annotations

from typing import Annotated

import typer


def evaluate(
    run: Annotated[str, typer.Option(help="MLflow run id, or a checkpoint file/folder.")],
    split: Annotated[str, typer.Option(help="Split to score.")] = "test",
    protocol: Annotated[str, typer.Option(help="full | coco5k | coco1k (5 folds of 1,000 images).")] = "full",
    data: Annotated[str | None, typer.Option(help="Precompute folder (default: the run's).")] = None,
    tracking_uri: Annotated[str | None, typer.Option(help="MLflow URI (default: sqlite in out dir).")] = None,
    output_dir: Annotated[str, typer.Option(help="Folder of the default MLflow store and reports.")] = (
        "vse_ray_out"
    ),
    coco_ids: Annotated[
        str | None, typer.Option(help="JSON {images: {id: coco_id}, captions: {id: coco_id}}: ECCV metrics.")
    ] = None,
) -> None:
    """Evaluate a run (both directions, every metric) and write a JSON report."""
    from vse_ray.evaluation.evaluate import evaluate_run

    report = evaluate_run(run, split, protocol, data, tracking_uri, output_dir, coco_ids)
    width = max(len(k) for k in report.metrics)
    for key, value in sorted(report.metrics.items()):
        typer.echo(f"{key:<{width}}  {value:.4f}")
    typer.echo(f"report: {report.path}")
