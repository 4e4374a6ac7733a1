"""Running `vse-ray` in-process and reading its one-line errors."""

from __future__ import annotations

from typer.testing import CliRunner

from vse_ray.cli.main import app


def run_cli(args: list[str]):
    """The result of ``vse-ray ARGS`` run in this process."""
    return CliRunner().invoke(app, args)


def zero_shot_args(params: dict[str, str], data: object, out: object) -> list[str]:
    """``evaluate --model clip`` with ``--set model_params.KEY=VALUE`` of `params` on `data`, into `out`."""
    sets = [arg for key, value in params.items() for arg in ("--set", f"model_params.{key}={value}")]
    return ["evaluate", "--model", "clip", *sets, "--data", str(data), "--output-dir", str(out)]


def one_error_line(result, *fragments: str) -> str:
    """The one ``error:`` line of a command that exited with code 2; it contains every fragment."""
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines[0].startswith("error: ") and "--debug" in lines[1] and len(lines) == 2, result.output
    assert all(f in lines[0] for f in fragments), lines[0]
    return lines[0]
