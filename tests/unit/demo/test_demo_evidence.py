"""The demo's table ends with the line that points to the study holding the evidence."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from vse_ray.demo.evidence import EVIDENCE_LINE, EVIDENCE_STUDY, STUDY_RESULTS, study_evidence
from vse_ray.demo.run import demo_study
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


def test_the_evidence_is_the_shipped_results_of_the_rows_the_demo_runs_as_the_study_does():
    evidence = study_evidence(demo_study())
    # ladder (same θ quantile and β), bcls and its shuffled control; not ladder_auto, sam, lseh (not in it)
    assert {row for row, _ in evidence.diffs} == {"ladder", "bcls", "bcls-shuffled"}
    bcls = evidence.diffs[("bcls", "rsum")]  # docs/studies.md: +34.6 [+31.2, +38.1]*
    assert (round(bcls.mean, 1), round(bcls.low, 1), round(bcls.high, 1)) == (34.6, 31.2, 38.1)
    assert bcls.excludes_zero and evidence.scale == "4,000 training images, 3 seeds"
    spec = demo_study(["vsepp", "ladder"], [])
    other = dataclasses.replace(spec, losses={**spec.losses, "ladder": {"betas": [1.0, 0.25]}})
    assert study_evidence(other).diffs == {}  # the ladder with other hyper-parameters is not the study's


def test_the_shipped_results_are_the_ones_docs_link_to():
    linked = ROOT / "docs" / "study_results" / f"{EVIDENCE_STUDY}.csv"
    assert linked.resolve() == (STUDY_RESULTS / f"{EVIDENCE_STUDY}.csv").resolve()
