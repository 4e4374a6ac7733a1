"""The shared table formatter: width fitting, middle-shortening, and csv/markdown/json round trips."""

from __future__ import annotations

import csv
import io
import json

import pytest

from vse_ray.reporting.table import Column, format_cell, render_table, shorten_middle

ROWS = [
    {
        "run": "trial_" + "abcdefghij" * 8 + "_end",
        "status": "FINISHED",
        "lr": 0.000123456789,
        "epochs": 3,
        "rsum": 250.123456,
        "note": None,
    },
    {"run": "b", "status": "KILLED", "lr": float("nan"), "epochs": 10, "rsum": 1.5, "note": "a|b,c"},
]
COLUMNS = [
    Column("run"),
    "status",
    Column("lr", number=".2e"),
    "epochs",
    Column("rsum", "R sum", ".1f"),
    "note",
]


def _markdown_rows(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split(" | ")] for line in text.splitlines()]


@pytest.mark.parametrize(
    ("text", "width", "expected"),
    [
        ("abcdefghij", 5, "ab…ij"),
        ("abcdefghij", 4, "ab…j"),
        ("abcdefghij", 10, "abcdefghij"),
        ("abc", 1, "…"),
    ],
)
def test_shorten_middle(text, width, expected):
    assert shorten_middle(text, width) == expected


def test_format_cell():
    assert [format_cell(v) for v in (None, float("nan"), 3, 0.000123456, "x", True)] == [
        "-",
        "-",
        "3",
        "0.0001235",
        "x",
        "True",
    ]
    assert (
        format_cell("two\nlines") == "two lines"
        and format_cell(12.345, ".1f") == "12.3"
        and format_cell(2.0, lambda v: f"{v:.0f}%") == "2%"
    )


def test_text_table_aligns_and_shortens_long_text_in_the_middle():
    lines = render_table(ROWS, COLUMNS, width=80).splitlines()
    assert max(len(line) for line in lines) == 80
    assert lines[0].split() == ["run", "status", "lr", "epochs", "R", "sum", "note"]
    first = lines[2].split()
    assert first[0].startswith("trial_abc") and first[0].endswith("_end") and "…" in first[0]
    assert first[1:] == ["FINISHED", "1.23e-04", "3", "250.1", "-"]
    assert lines[3].split() == ["b", "KILLED", "-", "10", "1.5", "a|b,c"]
    end = lines[0].index("epochs") + len("epochs")  # numbers are right-aligned under their header
    assert (lines[2][end - 2 : end], lines[3][end - 2 : end]) == (" 3", "10")


def test_columns_that_cannot_fit_are_left_out_and_named():
    row = {"name": "x" * 30} | {f"param_{i}": "y" * 20 for i in range(5)} | {f"m{i}": i / 7 for i in range(4)}
    columns = ["name", *(Column(f"param_{i}", optional=True) for i in range(5)), *(f"m{i}" for i in range(4))]
    lines = render_table([row], columns, width=80).splitlines()
    assert max(len(line) for line in lines) <= 80
    assert lines[0].split() == ["name", "param_0", "param_1", "m0", "m1", "m2", "m3"]
    assert lines[2].split() == ["x" * 30, "yyyy…yyyy", "yyyy…yyyy", "0", "0.1429", "0.2857", "0.4286"]
    assert (
        lines[-1] == "(3 columns left out to fit 80 characters: param_2, param_3, param_4)"
    )  # optional first
    narrow = render_table([row], columns, width=40).splitlines()
    assert [line.split() for line in narrow[:3]] == [["name", "m0"], ["-" * 30, "--"], ["x" * 30, "0"]]
    assert narrow[-1] == "(8 columns left out to fit 40 characte…)"


def test_csv_markdown_and_json_round_trip_the_same_numbers():
    as_json = json.loads(render_table(ROWS, COLUMNS, fmt="json"))
    as_csv = list(csv.DictReader(io.StringIO(render_table(ROWS, COLUMNS, fmt="csv"))))
    markdown = _markdown_rows(render_table(ROWS, COLUMNS, fmt="markdown"))
    assert markdown[0] == ["run", "status", "lr", "epochs", "R sum", "note"]
    assert markdown[1] == ["---", "---", "---:", "---:", "---:", "---"]
    by_title = [dict(zip(markdown[0], r, strict=True)) for r in markdown[2:]]
    for row, js, cs, md in zip(ROWS, as_json, as_csv, by_title, strict=True):
        assert js["run"] == cs["run"] == md["run"] == row["run"]  # full text outside the terminal table
        assert js["epochs"] == int(cs["epochs"]) == int(md["epochs"]) == row["epochs"]
        assert js["rsum"] == float(cs["rsum"]) == row["rsum"]  # exact in csv and json
        assert float(md["R sum"]) == pytest.approx(row["rsum"], abs=0.05)  # the column's .1f in markdown
    assert as_json[1]["lr"] is None and as_csv[1]["lr"] == "" and by_title[1]["lr"] == "-"
    assert as_json[0]["lr"] == float(as_csv[0]["lr"]) == ROWS[0]["lr"]
    assert as_csv[1]["note"] == "a|b,c" and by_title[1]["note"] == "a\\|b,c"


def test_bad_format_and_width():
    with pytest.raises(ValueError, match="format must be one of text, csv, markdown, json; got 'html'"):
        render_table(ROWS, fmt="html")
    with pytest.raises(ValueError, match="width must be at least 20"):
        render_table(ROWS, width=5)


@pytest.mark.parametrize(
    "key, value, expected",
    [
        ("R_at_1_i2t", 9.6, "9.6"),
        ("trueR_at_5_t2i", 52.25, "52.2"),
        ("ECCV_R_at_1_i2t", 3.0, "3.0"),
        ("val/rsum", 8.0, "8.0"),
        ("medr_i2t", 4.0, "4.0"),
        ("CS_at_100_i2t_scene", 0.0912, "0.091"),
        ("SR_at_10_m5_i2t", 0.25, "0.250"),
        ("ECCV_mAP_at_R_t2i", 0.31, "0.310"),
        (None, 9.6, "9.600"),
        (None, 12.34, "12.3"),
    ],
)
def test_metric_number_reads_the_scale_from_the_key(key, value, expected):
    from vse_ray.reporting import metric_number

    assert metric_number(value, key) == expected
