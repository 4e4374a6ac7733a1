"""Retrieval metrics with binary and graded relevance: R@K, CS@K, NCS@K, Semantic Recall, mAP@R, R-P, tau.

The functions live in :mod:`vse_ray.metrics.functional`, the declarations that `evaluate_all`, the headline
keys and the tables read in :mod:`vse_ray.metrics.registry`. Exports load on first use, so that tracking
and reporting read the declarations without the compiled kernels.
"""

from vse_ray.lazy_exports import lazy_exports

_FUNCTIONAL = "vse_ray.metrics.functional"
_LAZY = {
    "average_precision": _FUNCTIONAL,
    "coco_1k_folds": _FUNCTIONAL,
    "coherent_score": _FUNCTIONAL,
    "coherent_scores": _FUNCTIONAL,
    "evaluate_all": "vse_ray.metrics.collection",
    "first_caption_view": _FUNCTIONAL,
    "ground_truth_mask": _FUNCTIONAL,
    "image_block": _FUNCTIONAL,
    "kendall_tau_b": _FUNCTIONAL,
    "map_at_r": _FUNCTIONAL,
    "mean_over_folds": _FUNCTIONAL,
    "ncs": _FUNCTIONAL,
    "ncs_at_ks": _FUNCTIONAL,
    "r_precision": _FUNCTIONAL,
    "recall_at_k": _FUNCTIONAL,
    "retrieval_recall": _FUNCTIONAL,
    "semantic_recall": _FUNCTIONAL,
    "semantic_recall_at_ks": _FUNCTIONAL,
    "semantic_recall_by_image": _FUNCTIONAL,
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
__all__ = sorted(_LAZY)
