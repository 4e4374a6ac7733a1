"""Pure retrieval metrics on a full (queries x gallery) similarity matrix, chunked over queries."""

from vse_ray.metrics.functional.average_precision import average_precision
from vse_ray.metrics.functional.coco_folds import coco_1k_folds, image_block, mean_over_folds
from vse_ray.metrics.functional.coherent_score import coherent_score, coherent_scores
from vse_ray.metrics.functional.first_captions import first_caption_view
from vse_ray.metrics.functional.kendall_tau import kendall_tau_b
from vse_ray.metrics.functional.map_at_r import map_at_r
from vse_ray.metrics.functional.ncs import ncs, ncs_at_ks
from vse_ray.metrics.functional.r_precision import r_precision
from vse_ray.metrics.functional.recall_at_k import ground_truth_mask, recall_at_k
from vse_ray.metrics.functional.retrieval_recall import retrieval_recall
from vse_ray.metrics.functional.semantic_recall import semantic_recall, semantic_recall_at_ks
from vse_ray.metrics.functional.semantic_recall_by_image import semantic_recall_by_image

__all__ = [
    "average_precision",
    "coco_1k_folds",
    "coherent_score",
    "coherent_scores",
    "first_caption_view",
    "ground_truth_mask",
    "image_block",
    "kendall_tau_b",
    "map_at_r",
    "mean_over_folds",
    "ncs",
    "ncs_at_ks",
    "r_precision",
    "recall_at_k",
    "retrieval_recall",
    "semantic_recall",
    "semantic_recall_at_ks",
    "semantic_recall_by_image",
]
