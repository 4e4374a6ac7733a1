"""Command options: their defaults, read from the config dataclasses, and those given on the command line."""

from __future__ import annotations

import dataclasses
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


def default_of(config: type, name: str) -> Any:
    """The default of dataclass ``config``'s field ``name``: an option's default, declared once there."""
    found = {f.name: f for f in dataclasses.fields(config)}[name]
    if found.default_factory is not dataclasses.MISSING:
        return found.default_factory()
    return found.default
