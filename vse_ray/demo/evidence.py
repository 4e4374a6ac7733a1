"""The study that holds the evidence the demo's table cannot give: at its size it cannot settle which loss is
better (the table's floor, the recall of a random ranking, is `vse_ray.metrics.chance`)."""

from __future__ import annotations

EVIDENCE_STUDY = "ladder_bcls_cs"  # a shipped study (vse_ray/resources/studies), results in docs/studies.md
EVIDENCE_LINE = (  # one console line (<= 120 columns), as the table
    f"Too small to settle which loss is better; the evidence: `vse-ray study {EVIDENCE_STUDY}`, "
    "results in docs/studies.md"
)
