"""`vse-ray train`: one loss on a precompute folder, on Ray Train, tracked in MLflow."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from click.core import ParameterSource

from vse_ray.tracking import runs_table_url, ui_command
from vse_ray.train.config import TrainConfig
from vse_ray.train.preflight import check_training
from vse_ray.train.recipe import load_recipe, merge_overrides

# Command-line option → TrainConfig field, where the names differ.
CLI_FIELDS = {"param": "loss_params", "no_imgnorm": "normalize_image"}


def parse_loss_params(items: list[str]) -> dict[str, Any]:
    """`["margin=0.2", "margins=[0.2,0.01]"]` → `{"margin": 0.2, "margins": [0.2, 0.01]}` (JSON, else str)."""
    params: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"--param {item!r}: expected NAME=VALUE")
        try:
            params[key] = json.loads(raw)
        except json.JSONDecodeError:
            params[key] = raw
    return params


def train(
    ctx: typer.Context,
    data: Annotated[str, typer.Option(help="Precompute output folder.")],
    recipe: Annotated[
        str | None, typer.Option(help="A paper's settings by name (recipes/<name>.yaml) or a recipe file.")
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set", help="TrainConfig field KEY=VALUE (YAML), e.g. loss_params.margin=0.1; repeatable."
        ),
    ] = None,
    model: Annotated[
        str, typer.Option(help="vsepp (pooled features or --finetune) | vse_inf (regions).")
    ] = "vsepp",
    loss: Annotated[str, typer.Option(help="vse0|vsepp|ladder|ladder_auto|sam|bcls|lseh.")] = "vsepp",
    param: Annotated[list[str], typer.Option(help="Loss hyper-parameter NAME=JSON, repeatable.")] = [],  # noqa: B006
    epochs: Annotated[int, typer.Option(help="Epochs.")] = 30,
    batch_size: Annotated[int, typer.Option(help="Pairs per batch per worker.")] = 128,
    lr: Annotated[float, typer.Option(help="Adam learning rate.")] = 2e-4,
    lr_update: Annotated[int, typer.Option(help="Epochs between ×0.1 learning-rate decays.")] = 15,
    grad_clip: Annotated[float, typer.Option(help="Gradient norm clip.")] = 2.0,
    word_dim: Annotated[int, typer.Option(help="Word embedding size.")] = 300,
    embed_dim: Annotated[int, typer.Option(help="Joint embedding size.")] = 1024,
    no_imgnorm: Annotated[bool, typer.Option(help="Do not L2-normalise image embeddings (VSE0).")] = False,
    finetune: Annotated[bool, typer.Option(help="Fine-tune a CNN on the stored raw images.")] = False,
    cnn: Annotated[str, typer.Option(help="CNN to fine-tune: small|resnet18|...|vgg19.")] = ("resnet152"),
    cnn_weights: Annotated[str, typer.Option(help="torchvision weights, or none.")] = "IMAGENET1K_V1",
    num_workers: Annotated[int, typer.Option(help="Ray Train workers (DDP).")] = 1,
    cpus_per_worker: Annotated[float, typer.Option(help="CPUs reserved per worker.")] = 1.0,
    placement_strategy: Annotated[
        str, typer.Option(help="Where workers go: PACK (fill a node) | SPREAD | STRICT_PACK | STRICT_SPREAD.")
    ] = "PACK",
    use_gpu: Annotated[bool, typer.Option(help="One GPU per worker (NCCL).")] = False,
    seed: Annotated[int, typer.Option(help="Seed.")] = 0,
    output_dir: Annotated[str, typer.Option(help="Folder of checkpoints and the default MLflow store.")] = (
        "vse_ray_out"
    ),
    run_name: Annotated[str | None, typer.Option(help="Stable run name (dataset-loss-seed).")] = None,
    tracking_uri: Annotated[str | None, typer.Option(help="MLflow URI (default: sqlite in out dir).")] = None,
    experiment: Annotated[str | None, typer.Option(help="MLflow experiment (default: dataset name).")] = None,
    max_failures: Annotated[int, typer.Option(help="Worker failures tolerated before giving up.")] = 1,
    ray_address: Annotated[str | None, typer.Option(help="Ray cluster address (default: local).")] = None,
    resume: Annotated[bool, typer.Option(help="Continue the run when safe keys (epochs) changed.")] = False,
    new_run: Annotated[bool, typer.Option(help="Start a fresh run beside one with another config.")] = False,
    wait: Annotated[bool, typer.Option(help="Wait for another command training this run.")] = False,
) -> None:
    """Train one loss family; re-running the same command resumes from its last checkpoint.

    With --recipe, the recipe sets every field; options given on the command line and --set override it.
    """
    cfg = TrainConfig(
        data_dir=data,
        model=model,
        loss=loss,
        loss_params=parse_loss_params(param),
        epochs=epochs,
        batch_size=batch_size,
        lr=lr,
        lr_update=lr_update,
        grad_clip=grad_clip,
        word_dim=word_dim,
        embed_dim=embed_dim,
        normalize_image=not no_imgnorm,
        finetune=finetune,
        cnn=cnn,
        cnn_weights=None if cnn_weights.lower() == "none" else cnn_weights,
        num_workers=num_workers,
        cpus_per_worker=cpus_per_worker,
        placement_strategy=placement_strategy,
        use_gpu=use_gpu,
        seed=seed,
        output_dir=output_dir,
        run_name=run_name,
        tracking_uri=tracking_uri,
        experiment=experiment,
        max_failures=max_failures,
    )
    given = {
        CLI_FIELDS.get(name, name): getattr(cfg, CLI_FIELDS.get(name, name))
        for name in ctx.params
        if name not in ("data", "recipe", "set_", "ray_address", "resume", "new_run", "wait")
        and ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE
    }
    try:
        if recipe:
            cfg = load_recipe(recipe, data, set_ or [], **given).config
        elif set_:
            cfg = TrainConfig.from_dict(merge_overrides(cfg.to_dict(), set_))
    except ValueError as err:
        raise typer.BadParameter(str(err)) from err
    check_training(cfg)  # fields, loss, data folder, model input: before Ray and MLflow start
    from vse_ray.ray_session import ensure_ray, quiet_console
    from vse_ray.train.rerun import claim_run
    from vse_ray.train.trainer import fit

    cfg = claim_run(
        cfg, resume, new_run, wait, notify=typer.echo
    )  # the run's lock lasts as long as the command
    ensure_ray(ray_address)
    quiet_console()
    result = fit(cfg)
    best = result.best_metrics
    typer.echo(f"best epoch {best['epoch']}: rsum {best['rsum']:.1f}; checkpoint {result.best_checkpoint}")
    typer.echo(f"MLflow run {result.run_id}: {ui_command(result.tracking_uri)}")
    typer.echo(f"  then open {runs_table_url(result.tracking_uri, result.experiment_id)}")
