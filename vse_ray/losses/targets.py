"""Target matrices of the contrastive losses (InfoNCE, SigLIP): hard, multi-positive and graded.

Each mode gives, for the (B, B) image x caption logits of a batch, which pairs are positives and how much
each counts:

- ``hard``: the diagonal only (CLIP, Radford et al. 2021; SigLIP, Zhai et al. 2023); other captions of the
  same image are negatives, as in open_clip's ``ClipLoss`` and ``SigLipLoss``.
- ``multi``: every pair whose caption describes the query's image (equal ``image_ids``), each positive with
  an equal share, as ALBEF's retrieval fine-tuning (Li et al. 2021: 1/|P| on each of the P positives) and
  PCME++ (Chun 2024) treat the captions of one image. Without image ids it is ``hard``.
- ``graded``: the positives of ``multi`` mixed with soft targets from a stored relevance source, in the
  style of SoftCLIP (Gao et al. AAAI 2024: a softened target, ``(1 - λ)`` one-hot ``+ λ`` a softmax of
  similarities over a temperature) and CUSA's cross-modal soft labels (Huang et al. AAAI 2024: the softmax
  of a uni-modal teacher's similarities over a temperature, a KL term beside the hard loss).
  The graded weight of caption j for query i is

      w_ij = exp((r_ij - max_k r_ik) / τ),

  the softmax numerator scaled so that the query's most relevant caption has weight 1: InfoNCE normalises
  each row to the softmax, SigLIP reads it as a per-pair probability.
"""

from __future__ import annotations

import torch
from torch import Tensor

TARGET_MODES = ("hard", "multi", "graded")


def check_target_options(targets: str, temperature: float, soft_weight: float) -> None:
    """One clear ValueError for a bad target mode, relevance temperature τ or mixing weight λ."""
    if targets not in TARGET_MODES:
        raise ValueError(f"targets must be one of {TARGET_MODES}, got {targets!r}")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    if not 0.0 <= soft_weight <= 1.0:
        raise ValueError(f"soft_weight must be in [0, 1], got {soft_weight}")


def positive_pairs(targets: str, neg_mask: Tensor) -> Tensor:
    """(..., Q, C) bool positives: the diagonal (``hard``; (Q, C), broadcast), or every pair that is not a
    negative (``multi``, ``graded``: the pair and the other captions of its image, `negative_mask`'s
    complement)."""
    if targets == "hard":
        return torch.eye(*neg_mask.shape[-2:], dtype=torch.bool, device=neg_mask.device)
    return ~neg_mask


def graded_weights(relevance: Tensor, temperature: float) -> Tensor:
    """w_ij = exp((r_ij - max_k r_ik) / τ) per row of ``relevance`` (..., Q, C): in (0, 1], 1 at the row's
    most relevant candidate; each row divided by its sum is softmax(r_i / τ)."""
    return torch.exp((relevance - relevance.amax(-1, keepdim=True)) / temperature)


def target_distribution(positives: Tensor, soft: Tensor | None, soft_weight: float) -> Tensor:
    """Rows summing to 1 (the InfoNCE targets): the 0/1 floats ``positives`` (..., Q, C) each with an equal
    share, mixed ``(1 - λ) · that + λ · soft / soft.sum(-1)`` with the graded weights ``soft`` when given."""
    hard = positives / positives.sum(-1, keepdim=True)
    if soft is None:
        return hard
    return (1.0 - soft_weight) * hard + soft_weight * soft / soft.sum(-1, keepdim=True)
