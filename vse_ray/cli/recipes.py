"""`vse-ray recipes`: the shipped recipes, one line each; `--paper NAME`: every row of one paper's tables."""

from __future__ import annotations

from typing import Annotated

import typer

from vse_ray.reporting import DEFAULT_WIDTH, FORMATS, render_table


def recipes(
    paper: Annotated[
        str | None,
        typer.Option(
            help="List every row of this paper's tables (a file stem: vsepp, ladder_loss_cvsepp, sam_ncs, "
            "bcls_kendall, lseh): its recipe, the split and protocol the paper scored by (evaluate --paper), "
            "the numbers it reports (image-to-text / text-to-image), or why no recipe reproduces it."
        ),
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help=f"One of {', '.join(FORMATS)}.")] = "text",
) -> None:
    """List the shipped recipes (--paper NAME: every row of one paper); run one with `train --recipe`."""
    from vse_ray.train.paper_rows import paper_rows, short_reports
    from vse_ray.train.recipe import read_recipe, recipe_names

    if paper is not None:
        rows = [
            {
                "table": r.table,
                "row": r.row,
                "recipe": r.recipe or "–",
                "protocol": f"{r.split} {r.protocol}" if r.protocol else "–",
                "the paper reports (i2t/t2i)": short_reports(r.reports),
                "why no recipe": r.reason,
            }
            for r in paper_rows(paper)
        ]
        typer.echo(render_table(rows, fmt=fmt, width=None))  # the numbers whole, however wide
        return
    listing = []
    for name in recipe_names():
        raw = read_recipe(name)[1]
        info, train = raw.get("paper") or {}, raw.get("train") or {}
        row = f"{info.get('file', '?')} Table {info.get('table', '?')}: {info.get('row', '?')}"
        model, loss = train.get("model"), train.get("loss")
        listing.append({"recipe": name, "model": model, "loss": loss, "paper row": row})
    typer.echo(render_table(listing, fmt=fmt, width=DEFAULT_WIDTH))
