"""Kendall ranking loss terms (BCLS eq. 17) and their sliding-window hard-sample form (eq. 19)."""

from __future__ import annotations

from torch import Tensor

from vse_ray.losses.samplers import SlidingWindowSampler


def kendall_pair_terms(sims: Tensor, relevance: Tensor, alpha: float) -> Tensor:
    """Terms 1(r_qj > r_qk + α) [s_qk - s_qj]_+ of BCLS eq. 17, shape (..., Q, C, C) indexed [q, j, k].

    Memory is O(Q C²) per leading index: meant for small batches and as the reference of eq. 19.
    """
    discordant_allowed = relevance.unsqueeze(-1) > relevance.unsqueeze(-2) + alpha
    return (sims.unsqueeze(-2) - sims.unsqueeze(-1)).clamp(min=0) * discordant_allowed


def kendall_full(sims: Tensor, relevance: Tensor, alpha: float) -> Tensor:
    """Σ_j Σ_k 1(r_qj > r_qk + α) [s_qk - s_qj]_+ per query (BCLS eq. 17, one direction), shape (..., Q)."""
    return kendall_pair_terms(sims, relevance, alpha).sum((-1, -2))


def kendall_sliding_window(sims: Tensor, relevance: Tensor, sampler: SlidingWindowSampler) -> Tensor:
    """(1/M) Σ_m [s(q, T^_m) - s(q, T~_m)]_+ per query (BCLS eq. 19, one direction), shape (..., Q).

    T~_m is the furthest item of window m's positive set, T^_m the closest of its negative set (eq. 20);
    windows with an empty set contribute 0. The picks come from ``sampler.pairs`` (no gradient), the
    hinges from gathered similarities (autograd).
    """
    pairs = sampler.pairs(sims, relevance)
    furthest, closest = pairs.columns.split(sampler.n_windows, -1)
    valid = pairs.valid[..., : sampler.n_windows]
    hinges = (sims.gather(-1, closest) - sims.gather(-1, furthest)).clamp(min=0) * valid
    return hinges.sum(-1) / sampler.n_windows
