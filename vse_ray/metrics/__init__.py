"""Retrieval metrics with binary and graded relevance: R@K, CS@K, NCS@K, Semantic Recall, mAP@R, R-P, tau."""

from vse_ray.metrics import functional
from vse_ray.metrics.evaluate import evaluate_all
from vse_ray.metrics.functional import *  # noqa: F403  (the functional metrics are the public API)

__all__ = [*functional.__all__, "evaluate_all"]
