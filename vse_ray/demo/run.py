"""`vse-ray demo`: the study protocol at laptop scale on the embedded dataset.

One shared sum-of-hinges warm-up per seed, then every loss family for its own epochs from that checkpoint,
plus the shuffled-relevance control of a graded loss, each selected on validation rsum and scored on test
(`vse_ray.study.run_study`, through the one Tune driver).
"""

from __future__ import annotations

from vse_ray.demo.evidence import EVIDENCE_LINE
from vse_ray.demo.settings import DemoSettings
from vse_ray.metrics.chance import chance_levels
from vse_ray.study.context import StudyResult
from vse_ray.study.run import run_study
from vse_ray.study.spec import StudySpec


def run_demo(
    settings: DemoSettings | None = None, *, spec: StudySpec | None = None, wait: bool = False
) -> StudyResult:
    """Run the demo study (everything checked before Ray starts) and print its table and where to look;
    ``spec``: the study of ``settings`` where the caller checked them already (`settings.validate().study()`);
    ``wait`` queues behind another command running it in the same output folder."""
    s = settings or DemoSettings()
    spec = spec if spec is not None else s.validate().study()
    ray_options = {"num_cpus": s.num_cpus, "include_dashboard": False, "object_store_memory": 400 * 1024**2}
    result = run_study(spec, s.output_dir, ray_options=ray_options, wait=wait, table_end=EVIDENCE_LINE)
    chance = chance_levels(s.n_test, 5 * s.n_test)
    print(f"Chance level (test, {s.n_test} images): rsum {chance['rsum']:.1f}")
    return result
