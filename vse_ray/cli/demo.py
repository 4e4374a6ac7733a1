"""`vse-ray demo`: the whole mission on the embedded dataset, ending with a comparison table."""

from __future__ import annotations

from typing import Annotated

import typer

from vse_ray.demo import DemoSettings, run_demo
from vse_ray.losses import LOSS_NAMES


def demo(
    output_dir: Annotated[str, typer.Option(help="Output folder (data, checkpoints, MLflow store).")] = (
        "vse_ray_out/demo"
    ),
    losses: Annotated[str, typer.Option(help="Comma-separated loss families.")] = ",".join(LOSS_NAMES),
    epochs: Annotated[int, typer.Option(help="Epochs per loss.")] = DemoSettings.epochs,
    n_train: Annotated[int, typer.Option(help="Synthetic training images.")] = DemoSettings.n_train,
    finetune: Annotated[bool, typer.Option(help="Fine-tune a small CNN on the raw images.")] = (
        DemoSettings.finetune
    ),
    seed: Annotated[int, typer.Option(help="Seed.")] = 0,
) -> None:
    """Generate the embedded dataset, precompute, train every loss, evaluate on test, compare."""
    names = tuple(name.strip() for name in losses.split(",") if name.strip())
    unknown = [name for name in names if name not in LOSS_NAMES]
    if unknown:
        raise typer.BadParameter(f"--losses: unknown {unknown}; expected some of {LOSS_NAMES}")
    run_demo(
        DemoSettings(
            output_dir=output_dir, losses=names, epochs=epochs, n_train=n_train, finetune=finetune, seed=seed
        )
    )
