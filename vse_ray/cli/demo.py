"""`vse-ray demo`: a small loss comparison on the embedded dataset, ending with a table over seeds."""

from __future__ import annotations

from typing import Annotated

import typer

from vse_ray.demo.study_file import demo_file, option_value
from vse_ray.folder_names import DEFAULT_OUTPUT_DIR

_, DEMO = demo_file()  # the shipped study the options override (their defaults)
SHUFFLED = ",".join(DEMO["controls"]["shuffled"])


def _opt(help_: str, value: object) -> typer.models.OptionInfo:
    """An option left at None (the study file's value), whose help shows that value."""
    return typer.Option(help=f"{help_} (study file: {value})", show_default=False)


def _file(name: str) -> object:
    """Option `name`'s value in the study file."""
    return option_value(DEMO, name)


def demo(
    output_dir: Annotated[str, typer.Option(help="Output folder (data, trials, MLflow store, log file).")] = (
        f"{DEFAULT_OUTPUT_DIR}/demo"
    ),
    losses: Annotated[
        str | None, _opt("Comma-separated loss families (vsepp is the baseline).", ",".join(DEMO["losses"]))
    ] = None,
    shuffled: Annotated[
        str | None,
        _opt("Losses also trained with shuffled relevance (the control); '' for none.", SHUFFLED),
    ] = None,
    seeds: Annotated[
        int | None, _opt("Seeds (2+ marks differences outside the seed noise).", _file("seeds"))
    ] = None,
    train_images: Annotated[
        int | None, _opt("Embedded training images (5 captions each).", _file("train_images"))
    ] = None,
    epochs: Annotated[
        int | None, _opt("Epochs of each loss after the shared warm-up.", _file("epochs"))
    ] = None,
    warmup_epochs: Annotated[
        int | None,
        _opt(
            "Shared sum-of-hinges warm-up epochs (VSE++ eq. 5), once per seed; 0 = none.",
            _file("warmup_epochs"),
        ),
    ] = None,
    lr: Annotated[float | None, _opt("Adam learning rate.", _file("lr"))] = None,
    lr_update: Annotated[
        int | None,
        _opt("Learning rate x0.1 after N epochs of each loss (0: after the warm-up).", _file("lr_update")),
    ] = None,
    batch_size: Annotated[
        int | None, _opt("Pairs per batch (in-batch negatives).", _file("batch_size"))
    ] = None,
    cnn: Annotated[
        str | None, _opt("CNN fine-tuned on the 64×64 images: tiny, small, resnet18...", _file("cnn"))
    ] = None,
    embed_dim: Annotated[
        int | None, _opt("Joint embedding size (GRU hidden size).", _file("embed_dim"))
    ] = None,
    word_dim: Annotated[int | None, _opt("Word embedding size.", _file("word_dim"))] = None,
    finetune: Annotated[
        bool | None,
        _opt("Fine-tune the CNN on the raw images (else: frozen random CNN features).", _file("finetune")),
    ] = None,
    concurrent: Annotated[int | None, _opt("Trials at once.", _file("concurrent"))] = None,
    num_cpus: Annotated[int, typer.Option(help="CPUs of the local Ray instance.")] = 2,
    seed: Annotated[int | None, _opt("Seed of the embedded data.", _file("seed"))] = None,
    wait: Annotated[bool, typer.Option(help="Wait for another demo running in this output folder.")] = False,
) -> None:
    """A small loss comparison on the embedded data (the shipped study `demo`; these options override it):
    warm-up once per seed, every loss family from it.

    The shuffled-relevance control of BCLS runs too; each run is selected on validation and scored on test.

    Table: mean ± std over seeds, Δ from VSE++ paired by seed (* outside the seed noise, with --seeds 2+).

    Logs of Ray and MLflow: <output-dir>/logs/vse_ray.log. One MLflow child run per loss and seed.
    """
    from vse_ray.demo.run import demo_study

    names = lambda text: None if text is None else [n.strip() for n in text.split(",") if n.strip()]  # noqa: E731
    spec = demo_study(  # bad input: one line (`readable_errors`), before Ray starts
        names(losses),
        names(shuffled),
        seeds=seeds,
        train_images=train_images,
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
        seed=seed,
    )
    from vse_ray.demo.run import run_demo
    from vse_ray.log_file import native_stderr_to_log

    with native_stderr_to_log(output_dir):
        run_demo(spec, output_dir, num_cpus=num_cpus, wait=wait)
