"""Negative / pair sampling strategies shared by the losses (one Selection contract)."""

from vse_ray.losses.samplers.base import BaseSampler, Selection
from vse_ray.losses.samplers.furthest import FurthestSampler
from vse_ray.losses.samplers.hard_contrastive import HardContrastivePairSampler
from vse_ray.losses.samplers.hardest import HardestSampler
from vse_ray.losses.samplers.log_sum_exp import masked_logsumexp, soft_hardest_similarity
from vse_ray.losses.samplers.random import RandomSampler
from vse_ray.losses.samplers.sliding_window import SlidingWindowSampler

__all__ = [
    "BaseSampler",
    "FurthestSampler",
    "HardContrastivePairSampler",
    "HardestSampler",
    "RandomSampler",
    "Selection",
    "SlidingWindowSampler",
    "masked_logsumexp",
    "soft_hardest_similarity",
]
