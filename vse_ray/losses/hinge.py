"""Triplet hinge terms shared by the margin-based losses."""

from __future__ import annotations

from torch import Tensor

from vse_ray.losses.samplers import HardestSampler


def positive_sims(sims: Tensor) -> Tensor:
    """s(q, q): the diagonal of query-major sims (..., Q, Q), shape (..., Q)."""
    return sims.diagonal(dim1=-2, dim2=-1)


def sum_of_hinges(scores: Tensor, positive: Tensor, candidates: Tensor, margin: float | Tensor) -> Tensor:
    """Σ_{j in candidates} [margin - s(q, q) + scores_qj]_+ per query (VSE++ eq. 5), shape (..., Q)."""
    hinge = (margin - positive.unsqueeze(-1) + scores).clamp(min=0)
    return (hinge * candidates).sum(-1)


def max_of_hinges(scores: Tensor, positive: Tensor, candidates: Tensor, margin: float) -> Tensor:
    """max_{j in candidates} [margin - s(q, q) + scores_qj]_+ per query (VSE++ eq. 6), shape (..., Q).

    ``scores`` may differ from the similarities (LSEH adds a semantic term); the positive is passed apart.
    """
    pick = HardestSampler()(scores, candidates)
    hinge = (margin - positive + pick.gather(scores).squeeze(-1)).clamp(min=0)
    return hinge * pick.valid.squeeze(-1)
