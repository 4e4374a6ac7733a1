"""`vse-ray demo`: a small loss comparison on the embedded dataset, ending with a table over seeds."""

from __future__ import annotations

from typing import Annotated

import typer

from vse_ray.demo.settings import DEMO_LOSSES, DemoSettings

D = DemoSettings


def demo(
    output_dir: Annotated[str, typer.Option(help="Output folder (data, trials, MLflow store, log file).")] = (
        D.output_dir
    ),
    losses: Annotated[str, typer.Option(help="Comma-separated loss families (vsepp is the baseline).")] = (
        ",".join(DEMO_LOSSES)
    ),
    shuffled: Annotated[
        str, typer.Option(help="Losses also trained with shuffled relevance (the control); '' for none.")
    ] = ",".join(D.shuffled),
    seeds: Annotated[
        int, typer.Option(help="Seeds (2+ marks differences outside the seed noise).")
    ] = D.seeds,
    train_images: Annotated[
        int, typer.Option(help="Embedded training images (5 captions each).")
    ] = D.n_train,
    epochs: Annotated[int, typer.Option(help="Epochs of each loss after the shared warm-up.")] = D.epochs,
    warmup_epochs: Annotated[
        int, typer.Option(help="Shared sum-of-hinges warm-up epochs (VSE++ eq. 5), once per seed; 0 = none.")
    ] = D.warmup_epochs,
    lr: Annotated[float, typer.Option(help="Adam learning rate.")] = D.lr,
    lr_update: Annotated[
        int, typer.Option(help="Learning rate x0.1 after N epochs of each loss (0: after the warm-up).")
    ] = D.lr_update,
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
    concurrent: Annotated[int, typer.Option(help="Trials at once.")] = D.concurrent,
    num_cpus: Annotated[int, typer.Option(help="CPUs of the local Ray instance.")] = D.num_cpus,
    seed: Annotated[int, typer.Option(help="Seed of the embedded data.")] = D.seed,
    wait: Annotated[bool, typer.Option(help="Wait for another demo running in this output folder.")] = False,
) -> None:
    """A small loss comparison on the embedded data: warm-up once per seed, every loss family from it.

    The shuffled-relevance control of BCLS runs too; each run is selected on validation and scored on test.

    Table: mean ± std over seeds, Δ from VSE++ paired by seed (* outside the seed noise, with --seeds 2+).

    Logs of Ray and MLflow: <output-dir>/logs/vse_ray.log. One MLflow child run per loss and seed.
    """
    settings = DemoSettings(
        output_dir=output_dir,
        losses=tuple(name.strip() for name in losses.split(",") if name.strip()),
        shuffled=tuple(name.strip() for name in shuffled.split(",") if name.strip()),
        seeds=seeds,
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
        concurrent=concurrent,
        num_cpus=num_cpus,
        seed=seed,
    )
    spec = settings.validate().study()  # bad input: one line (`readable_errors`), before Ray starts
    from vse_ray.demo.run import run_demo
    from vse_ray.log_file import native_stderr_to_log

    with native_stderr_to_log(settings.output_dir):
        run_demo(settings, spec=spec, wait=wait)
