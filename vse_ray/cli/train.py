"""`vse-ray train`: one loss on a precompute folder, on Ray Train, tracked in MLflow."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from vse_ray.cli.options import given_options, options_from
from vse_ray.config_fields import help_of
from vse_ray.file_lock import FolderLock
from vse_ray.tracking import runs_table_url, ui_command
from vse_ray.train.config import (
    NESTED,
    TrainConfig,
    fields_where,
    merge_overrides,
)

OPTION_FIELDS = fields_where(cli=True)  # the TrainConfig fields offered as options, each under its own name


def cli_overrides(ctx: typer.Context) -> list[str]:
    """The options given on the command line as ``KEY=VALUE`` overrides of TrainConfig fields.

    ``--param K=V`` is ``loss_params.K=V``; ``--no-imgnorm`` is ``normalize_image=false``; every other option
    is the field of its name. Options left at their default are not overrides (a recipe keeps its value).
    """
    given = given_options(ctx)
    items = [f"loss_params.{item}" for item in given.pop("param", [])]
    if given.pop("no_imgnorm", False):
        items.append("normalize_image=false")
    items += [f"{name}={json.dumps(value)}" for name, value in given.items() if name in OPTION_FIELDS]
    return items


@options_from(TrainConfig, OPTION_FIELDS, before="param")
def train(
    ctx: typer.Context,
    *,
    data: Annotated[str, typer.Option(help=help_of(TrainConfig, "data_dir"))],
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
    param: Annotated[
        list[str], typer.Option(help="Loss hyper-parameter NAME=VALUE (= --set loss_params.NAME=VALUE).")
    ] = [],  # noqa: B006
    no_imgnorm: Annotated[
        bool, typer.Option("--no-imgnorm", help="Do not L2-normalise image embeddings (VSE0).")
    ] = False,
    ray_address: Annotated[str | None, typer.Option(help="Ray cluster address (default: local).")] = None,
    resume: Annotated[bool, typer.Option(help="Continue the run when safe keys (epochs) changed.")] = False,
    new_run: Annotated[bool, typer.Option(help="Start a fresh run beside one with another config.")] = False,
    wait: Annotated[bool, typer.Option(help="Wait for another command training this run.")] = False,
    **fields: Any,
) -> None:
    """Train one loss family; re-running the same command resumes from its last checkpoint.

    Every TrainConfig field can be set with --set KEY=VALUE. With --recipe, the recipe sets the fields;
    --set overrides it, and options given on the command line override both.
    """
    # `fields`: the options of OPTION_FIELDS; `cli_overrides` takes those given on the command line from ctx
    from vse_ray.data.store.verify import data_folder

    data_folder(data)  # a missing folder fails before torch is imported; the whole check is below
    from vse_ray.train.preflight import check_training
    from vse_ray.train.recipe import check_recipe_data, load_recipe

    # a bad override, recipe or recipe/data mismatch: a ValueError, printed as one line (readable_errors)
    items = [*(set_ or []), *cli_overrides(ctx)]
    if recipe:  # the recipe checks the fields, naming its file
        loaded = load_recipe(recipe, data, items)
        check_recipe_data(loaded, data)
        valid = loaded.checked
    else:
        valid = TrainConfig.from_dict(merge_overrides({"data_dir": data}, items)).checked()
    # a precompute writing the data folder refuses this train, and one started later is refused (until
    # the command ends); the lock is shared with other readers and writes nothing there
    FolderLock(Path(valid.config.data_dir).expanduser(), f"data folder {valid.config.data_dir}").share()
    # data folder, model input, weights: before Ray and MLflow start; where the default trains
    checked = check_training(valid, ray_address)
    deviations = checked.config.deviations
    if deviations:
        typer.echo(f"Deviations from the official code ({len(deviations)}):")
        for line in deviations:
            typer.echo(f"  - {line}")
    from vse_ray.log_file import command_log, log_file_line
    from vse_ray.train.locked_image import missing_caches
    from vse_ray.train.rerun import claim_run
    from vse_ray.train.trainer import fit

    in_process = checked.config.num_workers == 0
    if in_process and ray_address:
        raise ValueError("--ray-address: num_workers 0 trains in this process, without Ray; drop one of them")
    # in process, Ray starts only for Ray Data to compute a missing image cache
    needs_ray = not in_process or (checked.config.image_cache and bool(missing_caches(checked.config)))

    def start_ray() -> None:
        from vse_ray.ray_session import ensure_ray  # imported only when Ray starts

        ensure_ray(ray_address)

    # MLflow's store-creation lines too; Ray Data's handler only where Ray starts
    with command_log(checked.config.output_dir, ray_data=needs_ray) as log:
        # locked for the command; a folder precomputed again since the run started is refused
        # Ray starts beside the store's creation, once the refusals are behind
        planned = claim_run(
            checked.config,
            resume,
            new_run,
            wait,
            notify=typer.echo,
            data=checked.data,
            beside=start_ray if needs_ray else lambda: None,
        )
        if planned.run_name != checked.config.run_name:
            checked = checked.renamed(planned.run_name)
        typer.echo(log_file_line(log))
        result = fit(checked)
    best = result.best_metrics
    typer.echo(f"best epoch {best['epoch']}: rsum {best['rsum']:.1f}; checkpoint {result.best_checkpoint}")
    typer.echo(f"MLflow run {result.run_id}: {ui_command(result.tracking_uri)}")
    typer.echo(f"  then open {runs_table_url(result.tracking_uri, result.experiment_id)}")
