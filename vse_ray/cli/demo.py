"""`vse-ray demo`: the whole mission on the embedded dataset, ending with a comparison table."""

from __future__ import annotations

from typing import Annotated

import typer

from vse_ray.demo.settings import TRAINERS, DemoSettings
from vse_ray.losses import LOSS_NAMES

D = DemoSettings


def demo(
    output_dir: Annotated[str, typer.Option(help="Output folder (data, checkpoints, MLflow store).")] = (
        D.output_dir
    ),
    losses: Annotated[str, typer.Option(help="Comma-separated loss families.")] = ",".join(LOSS_NAMES),
    train_images: Annotated[int, typer.Option(help="Synthetic training images (5 captions each).")] = (
        D.n_train
    ),
    epochs: Annotated[int, typer.Option(help="Epochs per loss, warm-up included.")] = D.epochs,
    warmup_epochs: Annotated[
        int,
        typer.Option(
            help="First epochs trained with the sum of hinges (VSE++ eq. 5) for every loss alike, once and "
            "shared (hardest-negative losses need a reasonable embedding first); 0 = none."
        ),
    ] = D.warmup_epochs,
    lr: Annotated[float, typer.Option(help="Adam learning rate.")] = D.lr,
    lr_update: Annotated[int, typer.Option(help="Multiply the learning rate by 0.1 every N epochs.")] = (
        D.lr_update
    ),
    batch_size: Annotated[int, typer.Option(help="Pairs per batch (in-batch negatives).")] = D.batch_size,
    cnn: Annotated[str, typer.Option(help="CNN fine-tuned on the 64×64 images: tiny, small, resnet18...")] = (
        D.cnn
    ),
    embed_dim: Annotated[int, typer.Option(help="Joint embedding size (GRU hidden size).")] = D.embed_dim,
    word_dim: Annotated[int, typer.Option(help="Word embedding size.")] = D.word_dim,
    finetune: Annotated[
        bool,
        typer.Option(help="Fine-tune the CNN on the raw images (else: frozen random ResNet-18 features)."),
    ] = D.finetune,
    trainer: Annotated[
        str,
        typer.Option(
            help="tune: the losses as Ray Tune trials of one run, each in its own process (fast); "
            "ray-train: one TorchTrainer (DDP, 1 worker) per loss (~35 s start-up each)."
        ),
    ] = D.trainer,
    concurrent: Annotated[int, typer.Option(help="Trials at once (tune trainer).")] = D.concurrent,
    num_cpus: Annotated[int, typer.Option(help="CPUs of the local Ray instance.")] = D.num_cpus,
    seed: Annotated[int, typer.Option(help="Seed of the data, the models and the batches.")] = D.seed,
) -> None:
    """Generate the embedded dataset, precompute, train every loss, evaluate on test, compare.

    Defaults fit 2 CPU cores in under 10 minutes (about 5 measured): a tiny CNN fine-tuned on the 64×64
    images, 3 shared sum-of-hinges warm-up epochs at lr 1e-3, then 1 epoch of each loss at 1e-4. Schedule
    knobs are the TrainConfig fields of the same name; loss hyper-parameters fitted to the embedded data are
    in vse_ray.demo.run.DEMO_LOSS_PARAMS. One MLflow run per loss, nested under the demo's run.
    """
    names = tuple(name.strip() for name in losses.split(",") if name.strip())
    if trainer not in TRAINERS:
        raise typer.BadParameter(f"--trainer: expected one of {TRAINERS}, got {trainer!r}")
    settings = DemoSettings(
        output_dir=output_dir,
        losses=names,
        n_train=train_images,
        epochs=epochs,
        warmup_epochs=warmup_epochs,
        lr=lr,
        lr_update=lr_update,
        batch_size=batch_size,
        cnn=cnn,
        embed_dim=embed_dim,
        word_dim=word_dim,
        finetune=finetune,
        trainer=trainer,
        concurrent=concurrent,
        num_cpus=num_cpus,
        seed=seed,
    )
    try:
        settings.validate()
    except ValueError as err:
        raise typer.BadParameter(str(err)) from err
    from vse_ray.demo.run import run_demo

    run_demo(settings)
