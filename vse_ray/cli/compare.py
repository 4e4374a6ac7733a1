"""`vse-ray compare`: print a table of MLflow runs, for people without a browser (and for scripts, papers)."""

from __future__ import annotations

from typing import Annotated

import typer

from vse_ray.folder_names import DEFAULT_OUTPUT_DIR
from vse_ray.reporting import DEFAULT_WIDTH, FORMATS
from vse_ray.tracking import resolve_tracking_uri
from vse_ray.tracking.lifecycle import check_server
from vse_ray.tracking.metric_keys import VAL_RSUM
from vse_ray.tracking.uri import local_store
from vse_ray.tune.runs_table import DEFAULT_METRICS, fetch_runs, runs_table


def compare(
    experiment: Annotated[str, typer.Option(help="MLflow experiment name (default of a run: its dataset).")],
    metric: Annotated[str, typer.Option(help="Metric to sort by (best first).")] = VAL_RSUM,
    mode: Annotated[str, typer.Option(help="'max' or 'min': which end of --metric is best.")] = "max",
    tracking_uri: Annotated[
        str | None,
        typer.Option(envvar="MLFLOW_TRACKING_URI", help="MLflow store (default: sqlite in --output-dir)."),
    ] = None,
    output_dir: Annotated[str, typer.Option(help="Folder of the default mlflow.db.")] = DEFAULT_OUTPUT_DIR,
    parent: Annotated[str | None, typer.Option(help="Only runs under this sweep run id.")] = None,
    columns: Annotated[
        str,
        typer.Option(help=f"Comma-separated metrics to add to {', '.join(DEFAULT_METRICS)}."),
    ] = "",
    params: Annotated[
        str,
        typer.Option(help="'differ' (params that differ between the runs), 'all', 'none', or names a,b."),
    ] = "differ",
    format_: Annotated[str, typer.Option("--format", help=f"One of {', '.join(FORMATS)}.")] = "text",
    width: Annotated[int, typer.Option(help="Text table width in characters (0: no limit).")] = DEFAULT_WIDTH,
    limit: Annotated[int, typer.Option(help="Show at most this many runs (0: all).")] = 0,
) -> None:
    """Print the experiment's runs sorted by --metric, with the params that differ between them.

    A sweep's parent run is shown as its best trial; its trials are compared with each other.
    """
    if format_ not in FORMATS:
        raise typer.BadParameter(f"--format: format must be one of {', '.join(FORMATS)}; got {format_!r}")
    if mode not in ("max", "min"):
        raise typer.BadParameter(f"--mode must be 'max' or 'min', got {mode!r}")
    uri = resolve_tracking_uri(tracking_uri, output_dir)
    check_server(uri)  # MLflow itself retries an absent server for minutes
    store = local_store(uri)
    if store is not None and not store.is_file():  # a table of nothing, and a new store as a side effect
        raise ValueError(
            f"no MLflow store at {store}: pass the --output-dir (or --tracking-uri) a train, sweep or study "
            "wrote to"
        )
    from vse_ray.log_file import command_log

    # MLflow's lines go to the log file beside the store (the table may be piped into a script)
    with command_log(store.parent if store is not None else output_dir):
        runs = fetch_runs(uri, experiment, parent)  # an unknown experiment or metric: one line
        table = runs_table(
            runs,
            metric,
            mode,
            [c.strip() for c in columns.split(",") if c.strip()],
            params,
            limit or None,
            format_,
            width or None,
        )
    typer.echo(table)
