"""What the user typed: the options of a command given on its command line (not left at their default)."""

from __future__ import annotations

from typing import Any

import typer


def given_options(ctx: typer.Context) -> dict[str, Any]:
    """``{option name: value}`` of the options given on the command line.

    Compared by the source's name: typer vendors its own click, whose ParameterSource is not click's."""
    return {
        name: value
        for name, value in ctx.params.items()
        if getattr(ctx.get_parameter_source(name), "name", "") == "COMMANDLINE"
    }
