"""The rows of a paper's tables: its recipes, and the rows no recipe reproduces (``paper_rows.yaml``).

``vse-ray recipes --paper NAME`` lists them; NAME is a paper file's stem (``vsepp`` for ``vsepp.md``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from vse_ray.evaluation.evaluate import PaperNumbers
from vse_ray.evaluation.protocols import Protocol
from vse_ray.resources import RESOURCE_ROOT, parse_yaml
from vse_ray.train.recipe import read_recipe, recipe_names

PAPER_ROWS = RESOURCE_ROOT / "paper_rows.yaml"
_ROMAN = {"I": 1, "V": 5, "X": 10}


@dataclass
class PaperRow:
    """One row of a paper's table: the recipe that reproduces it, or the reason none does."""

    table: str
    row: str
    reports: dict[str, float] = field(default_factory=dict)
    recipe: str = ""
    protocol: str = ""  # the image set and what else differs from vse_ray's protocol (`Protocol.name`)
    split: str = ""
    reason: str = ""


def listed_rows() -> dict[str, list[dict[str, Any]]]:
    """``paper_rows.yaml``: paper file → its rows that no recipe reproduces (table, row, reason ...)."""
    return parse_yaml(PAPER_ROWS.read_text(encoding="utf-8"), str(PAPER_ROWS)) or {}


def _recipe_rows() -> dict[str, list[PaperRow]]:
    out: dict[str, list[PaperRow]] = {}
    for name in recipe_names():
        _, raw = read_recipe(name)
        paper = raw.get("paper") or {}
        row = PaperRow(
            str(paper.get("table", "?")),
            str(paper.get("row", "?")),
            raw.get("reports") or {},
            recipe=name,
            protocol=Protocol.of(paper).name,
            split=str(paper.get("split", "test")),
        )
        out.setdefault(str(paper.get("file", "?")), []).append(row)
    return out


def paper_numbers(recipe: str) -> PaperNumbers:
    """The numbers the paper reports for `recipe`'s row, with the protocol and split it scored them by."""
    _, raw = read_recipe(recipe)
    paper = raw.get("paper") or {}
    return PaperNumbers(recipe, Protocol.of(paper), str(paper.get("split", "test")), raw.get("reports") or {})


def paper_names() -> list[str]:
    """The papers (file stems) that have a recipe or a listed row."""
    return sorted({f.removesuffix(".md") for f in [*_recipe_rows(), *listed_rows()]})


def _natural(text: str) -> list[Any]:
    """Sort key: a table's roman or arabic number first, then the text with its numbers as numbers."""
    head = re.match(r"[IVX]+\b", text)
    if head:
        values = [_ROMAN[c] for c in head.group()]
        number = sum(-v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values))
        text = f"{number}{text[head.end() :]}"
    parts = [part for part in re.split(r"(\d+)", text) if part]
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in parts]


def paper_rows(paper: str) -> list[PaperRow]:
    """Every row of `paper` (a file stem, e.g. ``vsepp``) that vse_ray knows, in table and row order.

    Raises:
        ValueError: ``paper 'x': no recipe or listed row; papers: [...]``.
    """
    file = f"{paper.removesuffix('.md')}.md"
    rows = list(_recipe_rows().get(file, []))
    for entry in listed_rows().get(file, []):
        recipes = entry.get("recipes") or []
        rows.append(
            PaperRow(
                str(entry["table"]),
                str(entry["row"]),
                entry.get("reports") or {},
                recipe=" + ".join(recipes),
                reason=str(entry.get("reason", "")),
            )
        )
    if not rows:
        raise ValueError(f"paper {paper!r}: no recipe or listed row; papers: {paper_names()}")
    return sorted(rows, key=lambda r: (_natural(r.table), _natural(r.row)))


def short_reports(reports: dict[str, float]) -> str:
    """``R@1 58.3/43.6 R@10 93.3/87.8 rsum 495.3``: each metric's image-to-text / text-to-image values."""
    pairs: dict[str, list[str]] = {}
    for key, value in reports.items():
        name, _, direction = key.rpartition("_")
        if direction not in ("i2t", "t2i"):
            name, direction = key, ""
        label = re.sub(r"_at_", "@", name)
        cell = pairs.setdefault(label, ["–", "–"] if direction else [""])
        cell[1 if direction == "t2i" else 0] = str(value)
    return " ".join(f"{label} {'/'.join(values)}" for label, values in pairs.items())
