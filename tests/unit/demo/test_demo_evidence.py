"""The demo's table ends with the line that points to the study holding the evidence."""

from __future__ import annotations

from pathlib import Path

from vse_ray.demo.evidence import EVIDENCE_LINE, EVIDENCE_STUDY
from vse_ray.study.context import StudyResult
from vse_ray.study.run import print_result
from vse_ray.study.spec import load_study

ROOT = Path(__file__).resolve().parents[3]


def test_the_evidence_line_names_a_shipped_study_whose_results_are_documented():
    assert load_study(EVIDENCE_STUDY).baseline  # loads by this name (its `name:` is ladder-bcls-cs)
    assert f"vse-ray study {EVIDENCE_STUDY}" in EVIDENCE_LINE and "docs/studies.md" in EVIDENCE_LINE
    assert f"`{EVIDENCE_STUDY}`" in (ROOT / "docs" / "studies.md").read_text()
    assert len(EVIDENCE_LINE) <= 120  # a console line, as the table


def test_the_line_comes_right_under_the_table(capsys):
    table = "run    rsum\nvsepp  300.0\nCS@K: ..."
    files = {"markdown": "/out/summary.md", "csv": "/out/summary.csv"}
    result = StudyResult([], "sqlite:///x.db", "1", "parent", table, files, {"data": 1.0}, "u", "c")
    print_result(result, EVIDENCE_LINE)
    lines = capsys.readouterr().out.splitlines()
    assert lines[: len(table.splitlines()) + 1] == [*table.splitlines(), EVIDENCE_LINE]
