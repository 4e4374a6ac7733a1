"""Config dataclass fields that carry their help: one declaration gives a config its default and a command its
option (Hugging Face's ``metadata={"help": ...}`` idiom)."""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Any


def described(default: Any, help: str, **metadata: Any) -> Any:
    """A dataclass field with its ``help`` and other metadata; ``dataclasses.MISSING``: no default (dict and
    list defaults become factories)."""
    meta = {"help": help, **metadata}
    if isinstance(default, dict | list):
        return dataclasses.field(default_factory=partial(type(default), default), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def _field(config: type, name: str) -> dataclasses.Field:
    return {f.name: f for f in dataclasses.fields(config)}[name]


def default_of(config: type, name: str) -> Any:
    """The default of dataclass ``config``'s field ``name``; ValueError naming a field without one."""
    found = _field(config, name)
    if found.default_factory is not dataclasses.MISSING:
        return found.default_factory()
    if found.default is dataclasses.MISSING:
        raise ValueError(f"{config.__name__}.{name}: has no default")
    return found.default


def help_of(config: type, name: str) -> str:
    """The help text of dataclass ``config``'s field ``name`` (its metadata's ``help``)."""
    return _field(config, name).metadata["help"]
