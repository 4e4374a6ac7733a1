"""The study that holds the evidence the demo's table cannot give: at its size it cannot settle which loss is
better (the table's floor, the recall of a random ranking, is `vse_ray.metrics.chance`). Its results ship
with the package (`STUDY_RESULTS`), so the demo's table marks each Δ whose sign that study contradicts."""

from __future__ import annotations

import csv
import math

from vse_ray.resources import RESOURCE_ROOT
from vse_ray.study.spec import StudySpec, load_study
from vse_ray.study.stats import Interval
from vse_ray.study.summary import Evidence

EVIDENCE_STUDY = "ladder_bcls_cs"  # a shipped study (vse_ray/resources/studies), results in docs/studies.md
EVIDENCE_LINE = (  # one console line (<= 120 columns), as the table
    f"Too small to settle which loss is better; the evidence: `vse-ray study {EVIDENCE_STUDY}`, "
    "results in docs/studies.md"
)
# The summary CSV that `vse-ray study <name>` wrote for each shipped study's results in docs/studies.md.
STUDY_RESULTS = RESOURCE_ROOT / "study_results"


def study_evidence(demo: StudySpec, name: str = EVIDENCE_STUDY) -> Evidence:
    """The paired differences of study `name`'s shipped results, for the rows it ran exactly as ``demo``
    runs them (same loss, hyper-parameters and control, against the same baseline); none when the
    baselines differ."""
    study = load_study(name)
    ours = {v.name: v for v in demo.variants()}
    same = {v.name for v in study.variants() if ours.get(v.name) == v}
    if demo.baseline != study.baseline or study.baseline not in same:
        same = set()
    diffs = {}
    with open(STUDY_RESULTS / f"{name}.csv", newline="") as file:
        for line in csv.DictReader(file):
            if line["row"] in same and line["diff_mean"]:
                low, high = float(line["diff_ci95_low"]), float(line["diff_ci95_high"])
                diffs[(line["row"], line["metric"])] = Interval(
                    int(line["seeds"]), float(line["diff_mean"]), math.nan, low, high
                )
    sizes = study.embedded or {}
    scale = f"{sizes.get('train_images', 0):,} training images, {study.seeds} seeds"
    return Evidence(name, scale, diffs)
