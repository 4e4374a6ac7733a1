"""Stacked cross attention between regions and words, batched over every image × caption pair.

SCAN (Lee et al., ECCV 2018, Sec. 3.1-3.2) attends a query fragment (a word, or a region) to the context
fragments of the other modality:

- s_qc = x_q · y_c, the cosine of query q and context c (both sides are L2-normalised features);
- s̄_qc = [s_qc]_+ / sqrt(Σ_q' [s_q'c]_+²), thresholded and normalised over the queries for each context item
  (the official code's "clipped_l2norm" uses LeakyReLU(0.1) for [·]_+; ``clip_slope`` = 0 gives the paper's);
- α_qc = exp(λ s̄_qc) / Σ_c' exp(λ s̄_qc'), the attended vector a_q = Σ_c α_qc y_c.

SGRAF (Diao et al., AAAI 2021) uses the same attention (λ = 9) for its local alignments. Pairs are
batched: features of N_img images and N_txt captions give (N_img, N_txt, Q, C) logits in one pass.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

EPS = 1e-8


def length_mask(lengths: Tensor, max_len: int) -> Tensor:
    """(N, max_len) bool: True at the first ``lengths[n]`` positions of row n."""
    return torch.arange(max_len, device=lengths.device) < lengths[:, None]


def l2_normalize(x: Tensor, dim: int = -1) -> Tensor:
    """x / (||x||_2 + 1e-8) along ``dim`` (the references' l2norm); zero rows stay zero, gradient 0."""
    return x / (torch.linalg.vector_norm(x, dim=dim, keepdim=True) + EPS)


def cross_attention_weights(
    logits: Tensor,
    query_mask: Tensor | None,
    context_mask: Tensor | None,
    smooth: float,
    clip_slope: float = 0.1,
) -> Tensor:
    """Attention weights α (..., Q, C) of SCAN from the fragment similarities s (..., Q, C).

    Args:
        logits: s_qc, query fragments on dim -2, context fragments on dim -1.
        query_mask: (..., Q) or broadcastable, True for real queries (padding left out of the norm).
        context_mask: (..., C) or broadcastable, True for real context items (padding gets weight 0).
        smooth: λ, the inverse softmax temperature (λ_1 in SCAN, λ = 9 in SGRAF).
        clip_slope: negative slope of the threshold [·]_+ (0.1 in both reference codes, 0 in the papers).
    """
    clipped = F.leaky_relu(logits, clip_slope)
    if query_mask is not None:
        clipped = clipped * query_mask.unsqueeze(-1)
    normalised = clipped / (torch.linalg.vector_norm(clipped, dim=-2, keepdim=True) + EPS)
    scaled = normalised * smooth
    if context_mask is not None:
        scaled = scaled.masked_fill(~context_mask.unsqueeze(-2), float("-inf"))
    return torch.softmax(scaled, dim=-1)


def region_word_logits(regions: Tensor, words: Tensor) -> Tensor:
    """s of every pair: (N_img, N_txt, R, L) dot products of regions (N_img, R, E), words (N_txt, L, E)."""
    return torch.einsum("ire,tle->itrl", regions, words)
