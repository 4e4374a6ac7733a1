"""YAML files shipped inside the package: recipes, studies and tune spaces, found by name or by path.

``recipes/``, ``studies/`` and ``tune_spaces/`` at the top of a source checkout link to these folders, so
``studies/ladder_bcls_cs.yaml`` (a path) and ``ladder_bcls_cs`` (a name) name the same file, in a checkout
or after ``pip install``.
"""

from __future__ import annotations

from pathlib import Path

RESOURCE_ROOT = Path(__file__).resolve().parent
KINDS = {"recipe": "recipes", "study": "studies", "space": "tune_spaces"}


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
