"""`vse-ray import`: a checkpoint of the authors' released code as a vse_ray checkpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

FORMAT_HELP = "vse_infty_bigru: VSE∞ (github.com/woodfrog/vse_infty, BiGRU branch, region features)."


def import_checkpoint(
    checkpoint: Annotated[str, typer.Option(help="The released checkpoint file (e.g. model_best.pth).")],
    output: Annotated[str, typer.Option(help="Folder of the vse_ray checkpoint (a new folder).")],
    fmt: Annotated[str, typer.Option("--format", help=FORMAT_HELP)] = "vse_infty_bigru",
    data: Annotated[
        str, typer.Option(help="Precompute folder recorded for `evaluate` (or give --data).")
    ] = "",
) -> None:
    """Convert a released checkpoint (loaded without arbitrary unpickling) into a vse_ray checkpoint that
    `vse-ray evaluate --run FOLDER` reads."""
    from vse_ray.official import FORMATS
    from vse_ray.tracking.checkpoint import CHECKPOINT_FILE

    if fmt not in FORMATS:
        raise ValueError(f"format: must be one of {sorted(FORMATS)}, got {fmt!r}")
    target = Path(output) / CHECKPOINT_FILE
    if target.exists():
        raise ValueError(f"output: {target} exists; choose another folder or remove it")
    path = FORMATS[fmt](checkpoint, output, data)
    typer.echo(f"imported {checkpoint} ({fmt}) -> {path}")
