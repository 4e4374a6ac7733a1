"""`vse-ray sweep`: a Ray Tune sweep over a tune_spaces/*.yaml search space."""

from __future__ import annotations

from functools import partial
from typing import Annotated

import typer

from vse_ray.config_fields import default_of
from vse_ray.train.config import TrainConfig, merge_overrides
from vse_ray.tune.sweep_config import SweepConfig

_SWEEP = partial(default_of, SweepConfig)  # each option's default is its SweepConfig field's


def sweep(
    space: Annotated[str, typer.Option(help="Shipped space name (ladder_auto) or a search-space YAML path.")],
    data_dir: Annotated[str, typer.Option(help="Precompute output folder every trial trains on.")],
    num_samples: Annotated[int, typer.Option(help="Trials drawn (grid leaves multiply it).")] = _SWEEP(
        "num_samples"
    ),
    scheduler: Annotated[str, typer.Option(help="'asha' (early-stop weak trials) or 'fifo'.")] = _SWEEP(
        "scheduler"
    ),
    epochs: Annotated[int, typer.Option(help="Epochs per trial (ASHA's max_t).")] = default_of(
        TrainConfig, "epochs"
    ),
    grace_period: Annotated[int, typer.Option(help="Epochs before ASHA may stop a trial.")] = _SWEEP(
        "grace_period"
    ),
    reduction_factor: Annotated[int, typer.Option(help="ASHA keeps the top 1/N per rung.")] = _SWEEP(
        "reduction_factor"
    ),
    max_concurrent: Annotated[
        int, typer.Option(help="Trials running at once (0: as resources allow).")
    ] = _SWEEP("max_concurrent"),
    trial_mode: Annotated[
        str, typer.Option(help="'process': one process per trial; 'ddp': a TorchTrainer per trial.")
    ] = _SWEEP("trial_mode"),
    cpus_per_trial: Annotated[float, typer.Option(help="CPUs of a 'process' trial.")] = _SWEEP(
        "cpus_per_trial"
    ),
    gpus_per_trial: Annotated[
        float, typer.Option(help="GPUs of a 'process' trial (0.25: 4 per GPU).")
    ] = _SWEEP("gpus_per_trial"),
    name: Annotated[str | None, typer.Option(help="Sweep name; reuse it to resume.")] = _SWEEP("name"),
    resume: Annotated[bool, typer.Option(help="Resume an interrupted sweep of the same name.")] = _SWEEP(
        "resume"
    ),
    wait: Annotated[bool, typer.Option(help="Wait for another command running this sweep.")] = False,
    stop_after_trials: Annotated[
        int, typer.Option(help="End this run after N finished trials; rerun to resume (0: no limit).")
    ] = _SWEEP("stop_after_trials"),
    seed: Annotated[int, typer.Option(help="Random seed of the search.")] = _SWEEP("seed"),
    output_dir: Annotated[str, typer.Option(help="Output folder.")] = _SWEEP("output_dir"),
    storage_path: Annotated[str | None, typer.Option(help="Shared storage for trials.")] = _SWEEP(
        "storage_path"
    ),
    tracking_uri: Annotated[
        str | None,
        typer.Option(envvar="MLFLOW_TRACKING_URI", help="MLflow store URI."),
    ] = _SWEEP("tracking_uri"),
    experiment: Annotated[str | None, typer.Option(help="MLflow experiment (default: dataset).")] = _SWEEP(
        "experiment"
    ),
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="Fixed TrainConfig field KEY=VALUE (YAML; dotted keys as train --set)."),
    ] = None,
) -> None:
    """Tune over the space; print and log the best trial; `vse-ray compare` or the MLflow UI show the runs."""
    from vse_ray.tune.sweep import check_sweep, run_sweep

    train = merge_overrides({"epochs": epochs}, set_ or [])  # a bad --set: one line (readable_errors)
    cfg = SweepConfig(
        space=space,
        data_dir=data_dir,
        train=train,
        num_samples=num_samples,
        scheduler=scheduler,
        grace_period=grace_period,
        reduction_factor=reduction_factor,
        max_concurrent=max_concurrent,
        trial_mode=trial_mode,
        cpus_per_trial=cpus_per_trial,
        gpus_per_trial=gpus_per_trial,
        name=name,
        resume=resume,
        stop_after_trials=stop_after_trials,
        seed=seed,
        output_dir=output_dir,
        storage_path=storage_path,
        tracking_uri=tracking_uri,
        experiment=experiment,
    )
    from vse_ray.log_file import command_log, log_file_line

    checked = check_sweep(cfg)  # bad input: one line, and no output folder made
    with command_log(output_dir) as log:  # Ray's, Tune's and MLflow's lines go to the log file
        # bad input, a sweep in use: one line (`readable_errors`)
        result = run_sweep(checked, wait=wait, claimed=log_file_line(log))
    if not result.finished:
        raise typer.Exit(code=3)
