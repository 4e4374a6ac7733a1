"""InfoNCE: CLIP's symmetric cross-entropy with a learned logit scale, on hard, multi or graded targets."""

from __future__ import annotations

from torch import Tensor

from vse_ray.losses.learned_logits import LearnedLogitsLoss
from vse_ray.losses.targets import positive_pairs, target_distribution


class InfoNCELoss(LearnedLogitsLoss):
    """CLIP's loss (Radford et al. 2021, Fig. 3; van den Oord et al. 2018 eq. 4), both directions:

        ℓ(q) = -Σ_c T_qc log softmax_c(t · s_qc),    loss(b) = (ℓ_i2t(b) + ℓ_t2i(b)) / 2,

    t = exp(``logit_scale``) learned. The targets T of each query (`vse_ray.losses.targets`): the diagonal
    (``hard``: open_clip's ``ClipLoss``, to which ``reduction="mean"`` is equal), its image's captions with
    equal shares (``multi``), or those mixed with softmax(r_q / τ) (``graded``: (1 - λ) · multi + λ · soft).

    Args:
        targets: "hard" | "multi" | "graded".
        temperature: τ of the graded targets (default 0.1).
        soft_weight: λ of the graded targets (default 0.5).
        init_scale: t at the start (default 1/0.07, CLIP's).
        model_scale: start from the model's learned scale when it has one (default True).
        reduction: see BaseVSELoss (default "mean", as CLIP).
        relevance_source: see LearnedLogitsLoss.
    """

    def __init__(
        self,
        targets: str = "hard",
        temperature: float = 0.1,
        soft_weight: float = 0.5,
        init_scale: float = 1 / 0.07,
        model_scale: bool = True,
        reduction: str = "mean",
        relevance_source: str | None = None,
    ) -> None:
        super().__init__(
            targets, temperature, soft_weight, init_scale, None, model_scale, reduction, relevance_source
        )

    def query_loss(self, sims: Tensor, relevance: Tensor | None, candidates: Tensor) -> Tensor:
        log_probs = self.logits(sims).log_softmax(-1)
        # half of each direction's cross-entropy: the base sums the two directions per pair
        if self.targets == "hard":  # T = the identity: the diagonal, without a (B, B) product
            return -log_probs.diagonal(dim1=-2, dim2=-1) / 2
        positives = positive_pairs(self.targets, candidates).to(sims.dtype)
        targets = target_distribution(positives, self.soft_weights(relevance), self.soft_weight)
        return -(targets * log_probs).sum(-1) / 2
