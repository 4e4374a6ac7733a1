"""vse_ray.evaluation: score trained runs on a split, JSON reports, plots and retrieval examples."""

from vse_ray.evaluation.evaluate import PROTOCOLS, EvaluationReport, evaluate_run

__all__ = ["PROTOCOLS", "EvaluationReport", "evaluate_run"]
