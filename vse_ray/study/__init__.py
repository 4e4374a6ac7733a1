"""vse_ray.study: loss comparisons with seeds, controls and intervals (`studies/*.yaml`, `vse-ray study`)."""

from vse_ray.study.run import StudyResult, run_study, study_summary
from vse_ray.study.spec import ABLATIONS, StudySpec, Variant, load_study, parse_study

__all__ = [
    "ABLATIONS",
    "StudyResult",
    "StudySpec",
    "Variant",
    "load_study",
    "parse_study",
    "run_study",
    "study_summary",
]
