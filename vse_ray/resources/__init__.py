"""YAML files shipped inside the package: recipes, studies and tune spaces, found by name or by path.

``recipes/``, ``studies/`` and ``tune_spaces/`` at the top of a source checkout link to these folders, so
``studies/ladder_bcls_cs.yaml`` (a path) and ``ladder_bcls_cs`` (a name) name the same file, in a checkout
or after ``pip install``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

RESOURCE_ROOT = Path(__file__).resolve().parent
KINDS = {"recipe": "recipes", "study": "studies", "space": "tune_spaces"}
KEY_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")  # a key an error message may show
NOT_SHOWN = "<a key that is not a name: not shown>"


def resource_dir(kind: str) -> Path:
    """The package folder of one kind: ``recipe``, ``study`` or ``space``."""
    return RESOURCE_ROOT / KINDS[kind]


def resource_names(kind: str) -> list[str]:
    """Names (file stems) of the shipped files of one kind, sorted."""
    return sorted(p.stem for p in resource_dir(kind).glob("*.yaml"))


def resource_path(kind: str, name_or_path: str | Path) -> Path:
    """An existing file given as a path, else the shipped ``<kind folder>/<name>.yaml``.

    Raises:
        ValueError: ``<kind> '<name>': no such file or shipped <kind>; shipped: [...]``.
    """
    path = Path(name_or_path).expanduser()
    if path.is_file():
        return path
    shipped = resource_dir(kind) / f"{path.name}.yaml"
    if path.suffix not in (".yaml", ".yml") and path.parent == Path(".") and shipped.is_file():
        return shipped
    raise ValueError(
        f"{kind} {str(name_or_path)!r}: no such file or shipped {kind}; shipped: {resource_names(kind)}"
    )


def parse_yaml(text: str, source: str, loader: type[yaml.SafeLoader] = yaml.SafeLoader) -> Any:
    """The YAML document in ``text``, read by a safe loader (no tag builds a Python object).

    Raises:
        ValueError: One line naming ``source``, the line and column and what is wrong, for malformed
            YAML and for tags such as ``!!python/object`` alike.
    """
    try:
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        context = getattr(err, "context", None)
        raise ValueError(
            f"{source}: not valid YAML{where}: {f'{context}: ' if context else ''}{problem}"
        ) from err


def load_yaml(
    kind: str, name_or_path: str | Path, loader: type[yaml.SafeLoader] = yaml.SafeLoader
) -> tuple[Path, Any]:
    """``(path, document)`` of a YAML file of one kind, by path or shipped name (see :func:`resource_path`);
    ValueError in one line naming the file when it is not valid YAML or not UTF-8."""
    path = resource_path(kind, name_or_path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: expected a UTF-8 text file ({err.reason} at byte {err.start})") from err
    return path, parse_yaml(text, str(path), loader)


def shown_key(key: Any) -> str:
    """``key`` when it is a name, else a placeholder: an error never echoes a line of a file that is no YAML
    of ours (a password file given as a recipe holds its lines as keys)."""
    return key if isinstance(key, str) and KEY_NAME.fullmatch(key) else NOT_SHOWN


def shown_keys(keys: Sequence[Any]) -> str:
    """Unknown keys as an error shows them: ``['trian']``; keys that are not names are counted, never shown
    (``['trian', <2 keys that are not names: not shown>]``)."""
    shown = [repr(key) for key in keys if shown_key(key) != NOT_SHOWN]
    hidden = len(keys) - len(shown)
    if hidden:
        shown.append(f"<{hidden} keys that are not names: not shown>" if hidden > 1 else NOT_SHOWN)
    return f"[{', '.join(shown)}]"
