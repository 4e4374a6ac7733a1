"""SigLIP: the pairwise sigmoid loss with a learned scale and bias, on hard, multi or graded targets."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor

from vse_ray.losses.base import given
from vse_ray.losses.learned_logits import LearnedLogitsLoss
from vse_ray.losses.targets import graded_weights, positive_pairs


class SigLIPLoss(LearnedLogitsLoss):
    """The sigmoid loss of SigLIP (Zhai et al. 2023, Algorithm 1), one binary term per pair:

        loss(i) = -Σ_j [y_ij log σ(z_ij) + (1 - y_ij) log σ(-z_ij)],    z_ij = t · s_ij + b,

    t = exp(``logit_scale``) and b = ``logit_bias`` learned. With y the diagonal (``hard``) it is
    -Σ_j log σ(±z_ij), open_clip's ``SigLipLoss`` (= ``reduction="mean"``: the sum over all pairs / B).
    ``multi``: y = 1 on every caption of the image; ``graded``: y = (1 - λ) · multi + λ · w, with w the
    mean of the graded weights of the image's row and of the caption's column (`vse_ray.losses.targets`),
    so that neither direction's normalisation is preferred.

    Args:
        targets: "hard" | "multi" | "graded".
        temperature: τ of the graded weights (default 0.1).
        soft_weight: λ of the graded targets (default 0.5).
        init_scale: t at the start (default 10, SigLIP's: ln t = ln 10).
        init_bias: b at the start (default -10, SigLIP's).
        model_scale: start from the model's learned scale and bias when it has them (default True).
        reduction: see BaseVSELoss (default "mean").
        relevance_source: see LearnedLogitsLoss.
    """

    def __init__(
        self,
        targets: str = "hard",
        temperature: float = 0.1,
        soft_weight: float = 0.5,
        init_scale: float = 10.0,
        init_bias: float = -10.0,
        model_scale: bool = True,
        reduction: str = "mean",
        relevance_source: str | None = None,
    ) -> None:
        super().__init__(
            targets, temperature, soft_weight, init_scale, init_bias, model_scale, reduction, relevance_source
        )

    def compute_loss(self, sims: Tensor, relevance: Tensor | None, neg_mask: Tensor) -> Tensor:
        """Per-image sum over the batch's captions (B,), as -Σ_j [y log σ(z) + (1 - y) log σ(-z)] rewritten
        with -log σ(z) = softplus(z) - z and -log σ(-z) = softplus(z): Σ_j softplus(z_ij) - Σ_j y_ij z_ij,
        one elementwise pass over the logits (hard targets: `hard_loss`, the diagonal alone)."""
        logits = self.logits(sims)
        labels = positive_pairs(self.targets, neg_mask).to(sims.dtype)
        if self.targets == "graded":
            rows = graded_weights(given(relevance), self.temperature)
            both = (rows + graded_weights(given(relevance).T, self.temperature).T) / 2
            labels = (1.0 - self.soft_weight) * labels + self.soft_weight * both
        return F.softplus(logits).sum(-1) - (labels * logits).sum(-1)

    def hard_loss(self, sims: Tensor) -> Tensor:
        """y the diagonal: Σ_j softplus(z_ij) - z_ii."""
        logits = self.logits(sims)
        return F.softplus(logits).sum(-1) - logits.diagonal()
