"""`vse-ray compare`: print a table of MLflow runs, for people without a browser."""

from __future__ import annotations

from typing import Annotated

import typer

from vse_ray.tracking import resolve_tracking_uri
from vse_ray.tune.runs_table import DEFAULT_METRICS


def compare(
    experiment: Annotated[str, typer.Option(help="MLflow experiment name (default of a run: its dataset).")],
    metric: Annotated[str, typer.Option(help="Metric to sort by (best first).")] = "rsum",
    mode: Annotated[str, typer.Option(help="'max' or 'min': which end of --metric is best.")] = "max",
    tracking_uri: Annotated[
        str | None,
        typer.Option(envvar="MLFLOW_TRACKING_URI", help="MLflow store (default: sqlite in --output-dir)."),
    ] = None,
    output_dir: Annotated[str, typer.Option(help="Folder of the default mlflow.db.")] = "vse_ray_out",
    parent: Annotated[str | None, typer.Option(help="Only runs under this sweep run id.")] = None,
    columns: Annotated[
        str, typer.Option(help="Comma-separated extra metric columns (shown when a run has them).")
    ] = ",".join(DEFAULT_METRICS),
    limit: Annotated[int, typer.Option(help="Show at most this many runs (0: all).")] = 0,
) -> None:
    """Print the experiment's runs sorted by --metric, with the params that differ between them."""
    from vse_ray.tune.runs_table import fetch_runs, runs_table

    uri = resolve_tracking_uri(tracking_uri, output_dir)
    try:
        runs = fetch_runs(uri, experiment, parent)
        table = runs_table(runs, metric, mode, [c for c in columns.split(",") if c], limit or None)
    except ValueError as err:
        raise typer.BadParameter(str(err)) from err
    typer.echo(table)
