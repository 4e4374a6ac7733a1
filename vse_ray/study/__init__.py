"""vse_ray.study: loss comparisons with seeds, controls and intervals (`studies/*.yaml`, `vse-ray study`)."""

from vse_ray.lazy_exports import lazy_exports

_EXPORTS = {
    "ABLATIONS": "vse_ray.study.spec",
    "StudySpec": "vse_ray.study.spec",
    "Variant": "vse_ray.study.spec",
    "load_study": "vse_ray.study.spec",
    "parse_study": "vse_ray.study.spec",
    "StudyResult": "vse_ray.study.context",
    "run_study": "vse_ray.study.run",
    "study_summary": "vse_ray.study.summary_stage",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
