"""`vse-ray recipes`: the recipes shipped in the package, one line each (name, paper row, model, loss)."""

from __future__ import annotations

from typing import Annotated

import typer

from vse_ray.reporting import DEFAULT_WIDTH, FORMATS, render_table
from vse_ray.resources import load_yaml, resource_dir, resource_names


def recipes(
    fmt: Annotated[str, typer.Option("--format", help=f"One of {', '.join(FORMATS)}.")] = "text",
) -> None:
    """List the shipped recipes; run one with `vse-ray train --recipe <name>`."""
    rows = []
    for name in resource_names("recipe"):
        raw = load_yaml("recipe", resource_dir("recipe") / f"{name}.yaml")[1] or {}
        paper, train = raw.get("paper") or {}, raw.get("train") or {}
        row = f"{paper.get('file', '?')} Table {paper.get('table', '?')}: {paper.get('row', '?')}"
        rows.append(
            {"recipe": name, "model": train.get("model"), "loss": train.get("loss"), "paper row": row}
        )
    typer.echo(render_table(rows, fmt=fmt, width=DEFAULT_WIDTH))
