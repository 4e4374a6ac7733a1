"""Command options: generated from the config dataclasses' fields, and those given on the command line."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, TypeVar, get_type_hints

import typer

from vse_ray.config_fields import default_of, help_of

Command = TypeVar("Command", bound=Callable[..., Any])


def given_options(ctx: typer.Context) -> dict[str, Any]:
    """``{option name: value}`` of the options given on the command line.

    Compared by the source's name: typer vendors its own click, whose ParameterSource is not click's."""
    return {
        name: value
        for name, value in ctx.params.items()
        if getattr(ctx.get_parameter_source(name), "name", "") == "COMMANDLINE"
    }


def with_parameters(
    wrapper: Command, command: Callable[..., Any], added: list[inspect.Parameter], before: str | None = None
) -> Command:
    """``wrapper`` with the signature typer reads: ``command``'s, ``**kwargs`` left out, and ``added``
    before the parameter ``before`` (default: at the end). ``added`` are keyword-only, as are those after.
    """
    signature = inspect.signature(command, eval_str=True)
    kept = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    at = len(kept) if before is None else [p.name for p in kept].index(before)
    # typeshed's Callable lacks __signature__, which inspect (and so typer) reads
    wrapper.__signature__ = signature.replace(parameters=[*kept[:at], *added, *kept[at:]])  # type: ignore[attr-defined]
    wrapper.__annotations__ = {**command.__annotations__, **{p.name: p.annotation for p in added}}
    return wrapper


def options_from(
    config: type,
    names: Iterable[str],
    *,
    before: str | None = None,
    settings: Mapping[str, Mapping[str, Any]] | None = None,
) -> Callable[[Command], Command]:
    """Give a command one option per field ``names`` of dataclass ``config``, before its parameter ``before``.

    Each option has the field's type, default (none: a required option) and help (`help_of`), so it is
    written once, in the config; ``settings`` adds typer.Option arguments by name (e.g. an ``envvar``).
    The command takes the options as ``**kwargs``.
    """
    hints = get_type_hints(config)
    fields = {f.name: f for f in dataclasses.fields(config)}

    def option(name: str) -> inspect.Parameter:
        given = (settings or {}).get(name, {})
        annotation = Annotated[hints[name], typer.Option(help=help_of(config, name), **given)]  # type: ignore[valid-type]
        required = fields[name].default is dataclasses.MISSING is fields[name].default_factory
        default = inspect.Parameter.empty if required else default_of(config, name)
        return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)

    added = [option(name) for name in names]
    return lambda command: with_parameters(command, command, added, before)
