"""One table formatter for every report: rows of dicts as a terminal table, csv, markdown or json.

Text tables fit a width (long text shortened in the middle, numbers never cut); csv and json keep full
precision under the column keys, for scripts; markdown shows formatted numbers under the titles, for papers.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

FORMATS = ("text", "csv", "markdown", "json")
DEFAULT_WIDTH = 120
MISSING = "-"
ELLIPSIS = "…"
MIN_TEXT_WIDTH = 8
MIN_NAME_WIDTH = 32  # the first column names the rows: it is cut last and not below this
GAP = "  "


@dataclass(frozen=True)
class Column:
    """One column: ``key`` in the row dicts, its ``title`` (default: the key) and how numbers are written.

    ``number`` is a format spec for real numbers (``".4g"``, ``".1f"``) or a function of the number;
    integers are written in full unless ``number`` is a function. An ``optional`` column is the first
    to be left out of a text table that cannot fit its width. ``numeric`` (default: all values are
    numbers) right-aligns a column and never cuts its cells: set it for numbers written as text.
    """

    key: str
    title: str = ""
    number: str | Callable[[float], str] = ".4g"
    optional: bool = False
    numeric: bool | None = None

    @property
    def header(self) -> str:
        return self.title or self.key


def render_table(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[Column | str] | None = None,
    fmt: str = "text",
    width: int | None = DEFAULT_WIDTH,
) -> str:
    """``rows`` as a ``fmt`` table (``"text"``, ``"csv"``, ``"markdown"`` or ``"json"``).

    ``columns`` defaults to every key of the rows, in first-seen order. A text table fits ``width``
    characters (``None``: no limit): when even text columns cut to ``MIN_TEXT_WIDTH`` (the first column,
    which names the rows, to ``MIN_NAME_WIDTH``) would not fit, columns are left out from the right
    (``optional`` ones first, never the first column) and a last line names them; then the widest text
    columns are shortened in the middle until the table fits.

    Raises:
        ValueError: for an unknown ``fmt`` or a ``width`` below 20.
    """
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}; got {fmt!r}")
    if width is not None and width < 20:
        raise ValueError(f"width must be at least 20 characters, got {width}")
    cols = _columns(rows, columns)
    if fmt == "json":
        return json.dumps(
            [{c.key: _json_value(r.get(c.key)) for c in cols} for r in rows], indent=2, default=str
        )
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow([c.key for c in cols])
        writer.writerows([[_csv_value(r.get(c.key)) for c in cols] for r in rows])
        return out.getvalue().rstrip("\n")
    cells = [[format_cell(r.get(c.key), c.number) for c in cols] for r in rows]
    numeric = [
        _is_numeric_column([r.get(c.key) for r in rows]) if c.numeric is None else c.numeric for c in cols
    ]
    if fmt == "markdown":
        return _markdown([c.header for c in cols], cells, numeric)
    return _text([c.header for c in cols], cells, numeric, [c.optional for c in cols], width)


def shorten_middle(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters by replacing its middle with an ellipsis (start and end kept)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    head = width // 2
    tail = width - 1 - head
    return text[:head] + ELLIPSIS + (text[-tail:] if tail else "")


def format_cell(value: Any, number: str | Callable[[float], str] = ".4g") -> str:
    """One value as text: missing/NaN as ``-``, numbers by ``number``, anything else as one line of str."""
    if value is None or (_is_number(value) and not math.isfinite(float(value))):
        return MISSING
    if not _is_number(value):
        return " ".join(str(value).splitlines())
    if callable(number):
        return number(float(value))
    return str(int(value)) if isinstance(value, Integral) else format(float(value), number)


def _columns(rows: Sequence[Mapping[str, Any]], columns: Sequence[Column | str] | None) -> list[Column]:
    if columns is None:
        columns = list(dict.fromkeys(k for r in rows for k in r))
    return [c if isinstance(c, Column) else Column(c) for c in columns]


def _is_number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def _is_numeric_column(values: Sequence[Any]) -> bool:
    present = [v for v in values if v is not None]
    return bool(present) and all(_is_number(v) for v in present)


def _json_value(value: Any) -> Any:
    if _is_number(value):
        number = int(value) if isinstance(value, Integral) else float(value)
        return number if math.isfinite(number) else None
    return value


def _csv_value(value: Any) -> str:
    value = _json_value(value)
    return "" if value is None else str(value)


def _markdown(header: list[str], cells: list[list[str]], numeric: list[bool]) -> str:
    def line(values: Sequence[str]) -> str:
        return "| " + " | ".join(v.replace("|", "\\|") for v in values) + " |"

    rule = ["---:" if n else "---" for n in numeric]
    return "\n".join([line(header), line(rule), *(line(r) for r in cells)])


def _text(
    header: list[str], cells: list[list[str]], numeric: list[bool], optional: list[bool], width: int | None
) -> str:
    keep = list(range(len(header)))
    natural = [max([len(header[i]), *(len(r[i]) for r in cells)]) for i in keep]
    floor = [
        max([min(len(header[i]), MIN_TEXT_WIDTH), *(len(r[i]) for r in cells)])
        if numeric[i]
        else min(natural[i], MIN_NAME_WIDTH if i == 0 else MIN_TEXT_WIDTH)
        for i in keep
    ]
    limit = width or math.inf

    def total(widths: Sequence[int]) -> int:
        return sum(widths[i] for i in keep) + len(GAP) * (len(keep) - 1)

    dropped: list[int] = []
    while total(floor) > limit and len(keep) > 1:
        drop = max(keep[1:], key=lambda i: (optional[i], i))
        keep.remove(drop)
        dropped.append(drop)
    widths = list(natural)
    while total(widths) > limit and any(widths[i] > floor[i] for i in keep):
        widest = max((i for i in keep if widths[i] > floor[i]), key=lambda i: (widths[i] - floor[i], i))
        widths[widest] -= 1

    def line(values: Sequence[str]) -> str:
        parts = [
            shorten_middle(values[i], widths[i]).rjust(widths[i])
            if numeric[i]
            else shorten_middle(values[i], widths[i]).ljust(widths[i])
            for i in keep
        ]
        return GAP.join(parts).rstrip()

    lines = [line(header), GAP.join("-" * widths[i] for i in keep), *(line(r) for r in cells)]
    return "\n".join(lines + ([_drop_note(header, dropped, width)] if dropped else []))


def _drop_note(header: list[str], dropped: list[int], width: int | None) -> str:
    note = f"({len(dropped)} column{'s' if len(dropped) > 1 else ''} left out to fit {width} characters: "
    note += ", ".join(header[i] for i in sorted(dropped)) + ")"
    return note if width is None or len(note) <= width else note[: width - 2] + ELLIPSIS + ")"
