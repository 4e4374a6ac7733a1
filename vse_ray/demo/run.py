"""`vse-ray demo`: the study protocol at laptop scale on the embedded dataset (`studies/demo.yaml`).

One shared sum-of-hinges warm-up per seed, then every loss family for its own epochs from that checkpoint,
plus the shuffled-relevance control of a graded loss, each selected on validation rsum and scored on test
(`vse_ray.study.run_study`, through the one Tune driver).
"""

from __future__ import annotations

from typing import Any

from vse_ray.demo.evidence import EVIDENCE_LINE, study_evidence
from vse_ray.demo.study_file import demo_file, set_option
from vse_ray.metrics.chance import chance_levels
from vse_ray.study.context import StudyResult
from vse_ray.study.run import run_study
from vse_ray.study.spec import StudySpec, study_from_yaml


def demo_study(
    losses: list[str] | None = None, shuffled: list[str] | None = None, **options: Any
) -> StudySpec:
    """The demo study with `vse-ray demo`'s options applied (None keeps the file's value), validated once:
    ``losses`` selects families (with the file's hyper-parameters), ``shuffled`` their controls."""
    found, raw = demo_file()
    for name, value in options.items():
        if value is not None:
            set_option(raw, name, value)
    if losses is not None:
        raw["losses"] = {name: raw["losses"].get(name, {}) for name in losses}
    controls = raw.setdefault("controls", {})
    if shuffled is not None:
        controls["shuffled"] = shuffled
    controls["shuffled"] = [name for name in controls.get("shuffled", []) if name in raw["losses"]]
    return study_from_yaml(raw, f"{found} (with the vse-ray demo options)")


def run_demo(spec: StudySpec, output_dir: str, num_cpus: int = 2, wait: bool = False) -> StudyResult:
    """Run the demo study (checked by `demo_study` before Ray starts) on a local Ray of ``num_cpus`` CPUs
    and print its table, checked against the study at strength (`study_evidence`), and where to look;
    ``wait`` queues behind another command running it in the same output folder."""
    if num_cpus < 1:
        raise ValueError(f"num_cpus: must be >= 1, got {num_cpus}")
    ray_options = {"num_cpus": num_cpus, "object_store_memory": 400 * 1024**2}
    evidence = study_evidence(spec)
    result = run_study(
        spec, output_dir, ray_options=ray_options, wait=wait, table_end=EVIDENCE_LINE, evidence=evidence
    )
    n_test = (spec.embedded or {})["test_images"]
    chance = chance_levels(n_test, 5 * n_test)
    print(f"Chance level (test, {n_test} images): rsum {chance['rsum']:.1f}")
    return result
