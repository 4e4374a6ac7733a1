"""The `vse-ray` command: one Typer sub-command per workload, each a thin call into the library."""

from __future__ import annotations

import typer

from vse_ray.cli.compare import compare
from vse_ray.cli.demo import demo
from vse_ray.cli.evaluate import evaluate
from vse_ray.cli.precompute import precompute
from vse_ray.cli.study import study
from vse_ray.cli.sweep import sweep
from vse_ray.cli.train import train

app = typer.Typer(
    help="vse_ray: train and evaluate visual-semantic embeddings with graded relevance, on Ray.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)
# Sub-commands are registered below, one line each: app.command()(module.function)
app.command(name="sweep")(sweep)
app.command(name="compare")(compare)
app.command(name="precompute")(precompute)
app.command(name="train")(train)
app.command(name="evaluate")(evaluate)
app.command(name="demo")(demo)
app.command(name="study")(study)


if __name__ == "__main__":
    app()
