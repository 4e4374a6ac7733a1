"""`vse-ray train`: one loss on a precompute folder, on Ray Train, tracked in MLflow."""

from __future__ import annotations

import dataclasses
import json
from typing import Annotated, Any

import typer

from vse_ray.cli.options import given_options
from vse_ray.tracking import runs_table_url, ui_command
from vse_ray.train.config import (
    NESTED,
    CheckedConfig,
    TrainConfig,
    field_default,
    field_help,
    merge_overrides,
)


def _opt(name: str, **kwargs: Any) -> Any:
    """A typer option whose help is the TrainConfig field's (declared once, in `train.config`)."""
    return typer.Option(help=field_help(name), **kwargs)


def cli_overrides(ctx: typer.Context) -> list[str]:
    """The options given on the command line as ``KEY=VALUE`` overrides of TrainConfig fields.

    ``--param K=V`` is ``loss_params.K=V``; ``--no-imgnorm`` is ``normalize_image=false``; every other option
    is the field of its name. Options left at their default are not overrides (a recipe keeps its value).
    """
    given = given_options(ctx)
    items = [f"loss_params.{item}" for item in given.pop("param", [])]
    if given.pop("no_imgnorm", False):
        items.append("normalize_image=false")
    fields = {f.name for f in dataclasses.fields(TrainConfig)} - {"data_dir"}
    items += [f"{name}={json.dumps(value)}" for name, value in given.items() if name in fields]
    return items


def train(
    ctx: typer.Context,
    data: Annotated[str, typer.Option(help=field_help("data_dir"))],
    recipe: Annotated[
        str | None, typer.Option(help="A paper's settings by name (`vse-ray recipes`) or a recipe file.")
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="TrainConfig field KEY=VALUE (YAML); dotted keys set one entry of "
            f"{', '.join(NESTED)}, e.g. loss_params.margin=0.1; repeatable.",
        ),
    ] = None,
    model: Annotated[str, _opt("model")] = field_default("model"),
    loss: Annotated[str, _opt("loss")] = field_default("loss"),
    param: Annotated[
        list[str], typer.Option(help="Loss hyper-parameter NAME=VALUE (= --set loss_params.NAME=VALUE).")
    ] = [],  # noqa: B006
    epochs: Annotated[int, _opt("epochs")] = field_default("epochs"),
    batch_size: Annotated[int, _opt("batch_size")] = field_default("batch_size"),
    optimizer: Annotated[str, _opt("optimizer")] = field_default("optimizer"),
    lr: Annotated[float, _opt("lr")] = field_default("lr"),
    weight_decay: Annotated[float, _opt("weight_decay")] = field_default("weight_decay"),
    lr_update: Annotated[int, _opt("lr_update")] = field_default("lr_update"),
    grad_clip: Annotated[float, _opt("grad_clip")] = field_default("grad_clip"),
    warmup_epochs: Annotated[int, _opt("warmup_epochs")] = field_default("warmup_epochs"),
    negatives: Annotated[str, _opt("negatives")] = field_default("negatives"),
    word_dim: Annotated[int, _opt("word_dim")] = field_default("word_dim"),
    embed_dim: Annotated[int, _opt("embed_dim")] = field_default("embed_dim"),
    no_imgnorm: Annotated[bool, typer.Option(help="Do not L2-normalise image embeddings (VSE0).")] = False,
    train_fraction: Annotated[float, _opt("train_fraction")] = field_default("train_fraction"),
    concept_vectors: Annotated[str, _opt("concept_vectors")] = field_default("concept_vectors"),
    finetune: Annotated[bool, _opt("finetune")] = field_default("finetune"),
    cnn: Annotated[str, _opt("cnn")] = field_default("cnn"),
    cnn_weights: Annotated[str, _opt("cnn_weights")] = field_default("cnn_weights"),
    num_workers: Annotated[int, _opt("num_workers")] = field_default("num_workers"),
    cpus_per_worker: Annotated[float, _opt("cpus_per_worker")] = field_default("cpus_per_worker"),
    placement_strategy: Annotated[str, _opt("placement_strategy")] = field_default("placement_strategy"),
    use_gpu: Annotated[bool, _opt("use_gpu")] = field_default("use_gpu"),
    seed: Annotated[int, _opt("seed")] = field_default("seed"),
    output_dir: Annotated[str, _opt("output_dir")] = field_default("output_dir"),
    run_name: Annotated[str | None, _opt("run_name")] = field_default("run_name"),
    tracking_uri: Annotated[str | None, _opt("tracking_uri")] = field_default("tracking_uri"),
    experiment: Annotated[str | None, _opt("experiment")] = field_default("experiment"),
    max_failures: Annotated[int, _opt("max_failures")] = field_default("max_failures"),
    ray_address: Annotated[str | None, typer.Option(help="Ray cluster address (default: local).")] = None,
    resume: Annotated[bool, typer.Option(help="Continue the run when safe keys (epochs) changed.")] = False,
    new_run: Annotated[bool, typer.Option(help="Start a fresh run beside one with another config.")] = False,
    wait: Annotated[bool, typer.Option(help="Wait for another command training this run.")] = False,
) -> None:
    """Train one loss family; re-running the same command resumes from its last checkpoint.

    Every TrainConfig field can be set with --set KEY=VALUE. With --recipe, the recipe sets the fields;
    --set overrides it, and options given on the command line override both.
    """
    from vse_ray.data.store.verify import data_folder

    data_folder(data)  # a missing folder fails before torch is imported; the whole check is below
    from vse_ray.train.preflight import check_training
    from vse_ray.train.recipe import check_recipe_data, load_recipe

    # a bad override, recipe or recipe/data mismatch: a ValueError, printed as one line (readable_errors)
    items = [*(set_ or []), *cli_overrides(ctx)]
    if recipe:
        loaded = load_recipe(recipe, data, items)
        check_recipe_data(loaded, data)
        cfg: TrainConfig | CheckedConfig = loaded.checked
    else:
        cfg = TrainConfig.from_dict(merge_overrides({"data_dir": data}, items))
    checked = check_training(cfg)  # fields, loss, data folder, model input: before Ray and MLflow start
    deviations = checked.config.deviations
    if deviations:
        typer.echo(f"Deviations from the official code ({len(deviations)}):")
        for line in deviations:
            typer.echo(f"  - {line}")
    from vse_ray.log_file import command_log, log_file_line
    from vse_ray.ray_session import ensure_ray
    from vse_ray.train.rerun import claim_run
    from vse_ray.train.trainer import fit

    with command_log(checked.config.output_dir) as log:  # MLflow's store-creation lines too
        # locked for the command; a folder precomputed again since the run started is refused
        planned = claim_run(checked.config, resume, new_run, wait, notify=typer.echo, data=checked.data)
        if planned.run_name != checked.config.run_name:
            checked = checked.renamed(planned.run_name)
        typer.echo(log_file_line(log))
        ensure_ray(ray_address)
        result = fit(checked)
    best = result.best_metrics
    typer.echo(f"best epoch {best['epoch']}: rsum {best['rsum']:.1f}; checkpoint {result.best_checkpoint}")
    typer.echo(f"MLflow run {result.run_id}: {ui_command(result.tracking_uri)}")
    typer.echo(f"  then open {runs_table_url(result.tracking_uri, result.experiment_id)}")
