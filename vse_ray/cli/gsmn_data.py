"""`vse-ray gsmn-data`: GSMN's released data folder as a precomp folder with box columns and a graph file."""

from __future__ import annotations

from typing import Annotated

import typer


def gsmn_data(
    precomp_dir: Annotated[
        str,
        typer.Option(
            help="GSMN's released folder: per split _ims.npy, _ims_bbx.npy, _ims_size.npy, _caps.txt/.json."
        ),
    ],
    out: Annotated[
        str, typer.Option(help="New folder: {split}_ims.npy with 4 box columns, _caps.txt, graphs.json.")
    ],
) -> None:
    """Rewrite GSMN's released data for `vse-ray precompute --dataset precomp` and the sparse model's
    `model_params.graph_path`."""
    from vse_ray.official.gsmn_data import write_gsmn_data

    written = write_gsmn_data(precomp_dir, out)
    typer.echo(
        f"wrote {', '.join(written.splits)} to {out}; {written.graph_path}: {written.captions} captions"
        + (
            f" ({written.conflicting} with other edges elsewhere: the first kept)"
            if written.conflicting
            else ""
        )
    )
