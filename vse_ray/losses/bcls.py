"""BCLS: Triplet-SN on binary labels plus a Kendall ranking loss on continuous pseudo labels."""

from __future__ import annotations

from torch import Tensor

from vse_ray.losses.base import BaseVSELoss, check_non_negative, given
from vse_ray.losses.bcls_compiled import CompiledSlidingWindowBCLS
from vse_ray.losses.hinge import positive_sims
from vse_ray.losses.kendall import kendall_full, kendall_sliding_window
from vse_ray.losses.kernels.backend import use_compiled
from vse_ray.losses.samplers import SlidingWindowSampler, soft_hardest_similarity
from vse_ray.losses.samplers.sliding_window import EDGE_TOLERANCE

KENDALL_FORMS = ("sw_hs", "full", "none")
NEGATIVE_BELOW = 1.0 - EDGE_TOLERANCE  # Triplet-SN's negatives: candidates whose relevance is below 1


class BCLSLoss(BaseVSELoss):
    """Binary and Continuous Label Supervision: L_T-SN (eq. 14-15) + L_K (eq. 19, or eq. 17).

    Triplet-SN per query: [(1/γ) log Σ_{j: r_qj < 1} exp(γ s_qj) - s_qq + m]_+ over in-batch negatives.
    Kendall: with ``kendall="sw_hs"`` the sliding-window hard-sample form (eq. 18-20, window α, stride β,
    M = (2 - α)/β windows; see SlidingWindowSampler); with ``kendall="full"`` the O(B³) sum of eq. 17
    (all j, k of the batch, the positive included); ``kendall="none"`` drops L_K (Triplet-SN only, the
    ablation of the study protocol). The positive pair's relevance is set to 1, the paper's
    normalisation of the S-BERT pseudo labels r in [-1, 1]. On CPU tensors the "sw_hs" form is one
    autograd node whose forward and backward run as compiled loops over the queries
    (``CompiledSlidingWindowBCLS``); on other devices it is the torch expression ``triplet_sn(
    soft_hardest_similarity(...)) + kendall_sliding_window(...)`` with autograd, which stays on the
    device. The two agree to float rounding (see ``vse_ray.losses.kernels.backend``).

    Args:
        margin: m of eq. 14 (default 0.2).
        gamma: γ of eq. 15 (default 50).
        alpha: relaxation α of eq. 17, in (0, 2) (default 0.2).
        beta: sliding-window stride β (default 0.1).
        kendall: "sw_hs" | "full" | "none".
        reduction: see BaseVSELoss.
        relevance_source: see BaseVSELoss (default 'sbert').
    """

    relevance_source = "sbert"

    def __init__(
        self,
        margin: float = 0.2,
        gamma: float = 50.0,
        alpha: float = 0.2,
        beta: float = 0.1,
        kendall: str = "sw_hs",
        reduction: str = "sum",
        relevance_source: str | None = None,
    ) -> None:
        super().__init__(reduction, relevance_source)
        check_non_negative(margin=margin)
        if gamma <= 0:
            raise ValueError(f"gamma must be > 0, got {gamma}")
        if kendall not in KENDALL_FORMS:
            raise ValueError(f"kendall must be one of {KENDALL_FORMS}, got {kendall!r}")
        self.sampler = SlidingWindowSampler(alpha, beta)
        self.margin, self.gamma, self.alpha, self.beta, self.kendall = margin, gamma, alpha, beta, kendall

    def query_loss(self, sims: Tensor, relevance: Tensor | None, candidates: Tensor) -> Tensor:
        relevance = given(relevance).clone()
        relevance.diagonal(dim1=-2, dim2=-1).fill_(1.0)
        if self.kendall == "sw_hs" and use_compiled(sims):
            return CompiledSlidingWindowBCLS.apply(
                sims, relevance, candidates, self.sampler, self.gamma, self.margin, NEGATIVE_BELOW
            )
        soft_max, valid = soft_hardest_similarity(sims, candidates & (relevance < NEGATIVE_BELOW), self.gamma)
        triplet = triplet_sn(soft_max, positive_sims(sims), valid, self.margin)
        if self.kendall == "none":
            return triplet
        if self.kendall == "sw_hs":
            return triplet + kendall_sliding_window(sims, relevance, self.sampler)
        return triplet + kendall_full(sims, relevance, self.alpha)


def triplet_sn(soft_max: Tensor, positive: Tensor, valid: Tensor, margin: float) -> Tensor:
    """[soft_max - s(q, q) + m]_+ per query (BCLS eq. 14), 0 where the query has no negative."""
    return (soft_max - positive + margin).clamp(min=0) * valid
