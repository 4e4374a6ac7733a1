"""An open_clip model config (a config JSON, or the ``model_cfg`` of a local-dir folder's
``open_clip_config.json``) checked against open_clip's own fields before any tower is built: a bad value
stops with one line naming the file and the key, not a traceback from inside the library (or, for a
vocabulary smaller than the tokenizer's, an index error in the first training step).

The keys and their types are read from open_clip (``CLIPVisionCfg``, ``CLIPTextCfg``, ``CLIP.__init__``), so
they follow the installed version; the sizes must be positive.
"""

from __future__ import annotations

import dataclasses
import inspect
import types
import typing
from typing import Any

# The sizes that must be at least 1, by section ("" is the top level).
POSITIVE = {
    "": ("embed_dim",),
    "vision_cfg": ("layers", "width", "head_width", "patch_size", "image_size"),
    "text_cfg": ("context_length", "vocab_size", "width", "heads", "layers"),
}
SECTIONS = ("vision_cfg", "text_cfg")
NAMES = {
    type(None): "null",
    bool: "true or false",
    int: "an integer",
    float: "a number",
    str: "a string",
    dict: "an object",
}
PLURALS = {int: "integers", float: "numbers", str: "strings"}
# Read by open_clip's create_model beside CLIP's own arguments.
FACTORY_KEYS = ("custom_text", "multimodal_cfg")


def check_model_config(cfg: Any, where: str) -> None:
    """ValueError ``<where>: <key> ...`` (one line) when `cfg` is not an open_clip model config: not an
    object, a section missing or not an object, an unknown key, a value of another type, a size below 1."""
    from open_clip.model import CLIP, CLIPTextCfg, CLIPVisionCfg

    if not isinstance(cfg, dict):
        raise ValueError(f"{where}: expected a JSON object (open_clip's model config)")
    top = {
        name: param.annotation
        for name, param in inspect.signature(CLIP.__init__).parameters.items()
        if name != "self"
    }
    for section in ("embed_dim", *SECTIONS):
        if section not in cfg:
            raise ValueError(f"{where}: no {section!r}, not an open_clip model config")
    _check_keys(cfg, {**top, **dict.fromkeys(FACTORY_KEYS, Any), **dict.fromkeys(SECTIONS, Any)}, "", where)
    for section, fields in zip(SECTIONS, (CLIPVisionCfg, CLIPTextCfg), strict=True):
        value = cfg[section]
        if not isinstance(value, dict):
            raise ValueError(f"{where}: {section} {_shown(value)}: expected an object ({fields.__name__})")
        hints = typing.get_type_hints(fields)
        _check_keys(value, {f.name: hints[f.name] for f in dataclasses.fields(fields)}, section, where)


def check_vocabulary(cfg: dict[str, Any], tokenizer: Any, where: str) -> None:
    """ValueError when the text tower's ``vocab_size`` is smaller than its tokenizer's vocabulary (its ids
    would index past the embedding table)."""
    needed = getattr(tokenizer, "vocab_size", None)
    size = cfg["text_cfg"].get("vocab_size")
    if isinstance(needed, int) and isinstance(size, int) and size < needed:
        raise ValueError(
            f"{where}: text_cfg.vocab_size {size} is smaller than its tokenizer's vocabulary ({needed} ids)"
        )


def _check_keys(values: dict[str, Any], hints: dict[str, Any], section: str, where: str) -> None:
    prefix = f"{section}." if section else ""
    for key, value in values.items():
        if key not in hints:
            raise ValueError(
                f"{where}: {prefix}{key}: not a key of open_clip's {section or 'model config'} "
                f"(known: {', '.join(sorted(hints))})"
            )
        if not _fits(value, hints[key]):
            raise ValueError(f"{where}: {prefix}{key} {_shown(value)}: expected {_named(hints[key])}")
        if key in POSITIVE[section] and not _positive(value):
            raise ValueError(f"{where}: {prefix}{key} {_shown(value)}: must be at least 1")


def _fits(value: Any, hint: Any) -> bool:
    """Whether a JSON value fits a type hint (one JSON cannot hold, such as torch.dtype, is not checked)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, arg) for arg in args)
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if hint is dict or origin is dict:
        return isinstance(value, dict)
    if origin is tuple:  # a JSON list: Tuple[int, int] of that length, Tuple[int, ...] of any
        if not isinstance(value, list):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_fits(item, args[0]) for item in value)
        return len(value) == len(args) and all(map(_fits, value, args))
    return True


def _named(hint: Any) -> str:
    """A type hint as a user reads it: ``int``, ``int or list``, ``float or null``."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_named(arg) for arg in args)
    if origin is tuple:
        count = "" if Ellipsis in args else f"{len(args)} "
        return f"a list of {count}{PLURALS.get(args[0], 'values')}"
    return NAMES.get(hint, getattr(hint, "__name__", str(hint)))


def _positive(value: Any) -> bool:
    items = value if isinstance(value, list) else [value]
    return all(not isinstance(item, (int, float)) or item >= 1 for item in items)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
