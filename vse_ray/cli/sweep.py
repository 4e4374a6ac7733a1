"""`vse-ray sweep`: a Ray Tune sweep over a tune_spaces/*.yaml search space."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

import typer

from vse_ray.cli.options import options_from
from vse_ray.config_fields import default_of
from vse_ray.train.config import TrainConfig, merge_overrides
from vse_ray.tune.sweep_config import SweepConfig

# Every SweepConfig field is an option of its name, but `train` (from --epochs and --set).
OPTION_FIELDS = tuple(f.name for f in dataclasses.fields(SweepConfig) if f.name != "train")


@options_from(
    SweepConfig, OPTION_FIELDS, before="epochs", settings={"tracking_uri": {"envvar": "MLFLOW_TRACKING_URI"}}
)
def sweep(
    *,
    epochs: Annotated[int, typer.Option(help="Epochs per trial (ASHA's max_t).")] = default_of(
        TrainConfig, "epochs"
    ),
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="Fixed TrainConfig field KEY=VALUE (YAML; dotted keys as train --set)."),
    ] = None,
    wait: Annotated[bool, typer.Option(help="Wait for another command running this sweep.")] = False,
    **fields: Any,
) -> None:
    """Tune over the space; print and log the best trial; `vse-ray compare` or the MLflow UI show the runs."""
    from vse_ray.tune.sweep import check_sweep, run_sweep

    train = merge_overrides({"epochs": epochs}, set_ or [])  # a bad --set: one line (readable_errors)
    cfg = SweepConfig(train=train, **fields)  # `fields`: the options of OPTION_FIELDS
    from vse_ray.log_file import command_log, log_file_line

    checked = check_sweep(cfg)  # bad input: one line, and no output folder made
    with command_log(cfg.output_dir) as log:  # Ray's, Tune's and MLflow's lines go to the log file
        # bad input, a sweep in use: one line (`readable_errors`)
        result = run_sweep(checked, wait=wait, claimed=log_file_line(log))
    if not result.finished:
        raise typer.Exit(code=3)
