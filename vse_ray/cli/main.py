"""The `vse-ray` command: one Typer sub-command per workload, each a thin call into the library."""

from __future__ import annotations

import typer

app = typer.Typer(
    help="vse_ray: train and evaluate visual-semantic embeddings with graded relevance, on Ray.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)
# Sub-commands are registered below, one line each: app.command()(module.function)


if __name__ == "__main__":
    app()
