"""`vse-ray study`: compare losses over seeds with controls (studies/*.yaml), or print a study's summary."""

from __future__ import annotations

from typing import Annotated

import typer

from vse_ray.folder_names import DEFAULT_OUTPUT_DIR


def study(
    study_file: Annotated[
        str, typer.Argument(help="Shipped study name (ladder_bcls_cs) or a study YAML path.")
    ],
    output_dir: Annotated[
        str, typer.Option(help="Output folder: data, Tune trials, MLflow store (rerun to resume).")
    ] = f"{DEFAULT_OUTPUT_DIR}/studies",
    summary: Annotated[
        bool, typer.Option("--summary", help="Print the summary of a study already run here; train nothing.")
    ] = False,
    seeds: Annotated[int | None, typer.Option(help="Override the file's number of seeds.")] = None,
    num_cpus: Annotated[int | None, typer.Option(help="CPUs of a local Ray instance (default: all).")] = None,
    wait: Annotated[bool, typer.Option(help="Wait for another command running this study here.")] = False,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="Write a key of the study file, KEY=VALUE (YAML; dotted at any depth: data.data_dir=DIR); "
            "a file's `requires` keys must be given so.",
        ),
    ] = None,
) -> None:
    """Compare losses over seeds: one shared warm-up per seed, then every loss and control from it.

    Each run is a Ray Tune trial, selected on validation rsum and scored on test; rerun to resume.

    Prints one progress line per stage, then mean ± std over seeds and Δ from the baseline (paired by seed).

    A * marks a Δ whose 95 % t-interval excludes 0 (outside the seed noise).

    MLflow: a parent run with the table and the CS@K-vs-rsum plot; child runs <loss>[-<control>]-s<seed>.
    """
    from vse_ray.study.spec import load_study

    spec = load_study(study_file, seeds, set_)  # bad input: one line (`readable_errors`), before Ray
    if summary:
        from vse_ray.study.summary_stage import study_summary

        typer.echo(study_summary(spec, output_dir))
        return
    from vse_ray.study.preflight import check_study_inputs

    check_study_inputs(spec)  # the folder and weights it names, before Ray
    from vse_ray.log_file import native_stderr_to_log
    from vse_ray.study.run import run_study

    with native_stderr_to_log(output_dir):
        run_study(spec, output_dir, ray_options={"num_cpus": num_cpus} if num_cpus else None, wait=wait)
