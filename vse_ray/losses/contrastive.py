"""InfoNCE: CLIP's symmetric cross-entropy with a learned logit scale, on hard, multi or graded targets."""

from __future__ import annotations

import torch
from torch import Tensor

from vse_ray.losses.learned_logits import MAX_SCALE, LearnedLogitsLoss
from vse_ray.losses.targets import positive_pairs, target_distribution


class InfoNCELoss(LearnedLogitsLoss):
    """CLIP's loss (Radford et al. 2021, Fig. 3; van den Oord et al. 2018 eq. 4), both directions:

        ℓ(q) = -Σ_c T_qc log softmax_c(t · s_qc),    loss(b) = (ℓ_i2t(b) + ℓ_t2i(b)) / 2,

    t = exp(``logit_scale``) learned. The targets T of each query (`vse_ray.losses.targets`): the diagonal
    (``hard``: open_clip's ``ClipLoss``, to which ``reduction="mean"`` is equal), its image's captions with
    equal shares (``multi``), or those mixed with softmax(r_q / τ) (``graded``: (1 - λ) · multi + λ · soft).

    ``candidate_mean`` is CUSA's ``contrastive_loss_mode: mean`` (Huang et al. AAAI 2024, released
    ``unire/model.py``): each direction's term is also averaged over its C candidates and the two directions
    are summed, loss(b) = (ℓ_i2t(b) + ℓ_t2i(b)) / C, which is 2/C times the default. The gradient's direction
    is the same; its size differs, which Adam undoes but for its ε.

    `from_local_similarity` is open_clip's ``local_loss``: a worker's B queries of each direction against all
    W·B candidates of the global batch, B × W·B logits per direction rather than (W·B)².

    Args:
        targets: "hard" | "multi" | "graded".
        temperature: τ of the graded targets (default 0.1).
        soft_weight: λ of the graded targets (default 0.5).
        init_scale: t at the start (default 1/0.07, CLIP's).
        model_scale: start from the model's learned scale when it has one (default True).
        reduction: see BaseVSELoss (default "mean", as CLIP).
        relevance_source: see LearnedLogitsLoss.
        candidate_mean: CUSA's mean over the candidates too (default False).
        scale_param, scale_range: see LearnedLogitsLoss ("tau": τ learned as CUSA learns it).
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
        candidate_mean: bool = False,
        scale_param: str = "log",
        scale_range: tuple[float, float] | list[float] = (1.0, MAX_SCALE),
    ) -> None:
        super().__init__(
            targets,
            temperature,
            soft_weight,
            init_scale,
            None,
            model_scale,
            reduction,
            relevance_source,
            scale_param,
            scale_range,
        )
        if not isinstance(candidate_mean, bool):
            raise ValueError(f"candidate_mean must be true or false, got {candidate_mean!r}")
        self.candidate_mean = candidate_mean

    def query_loss(self, sims: Tensor, relevance: Tensor | None, candidates: Tensor) -> Tensor:
        return self._cross_entropy(sims, relevance, candidates, 0)

    def hard_loss(self, sims: Tensor) -> Tensor:
        """Both directions' cross-entropy of each pair (the base's stacking, without the negatives' mask)."""
        return self._cross_entropy(torch.stack((sims, sims.T)), None, sims.new_empty(0), 0).sum(0)

    def _cross_entropy(
        self, sims: Tensor, relevance: Tensor | None, candidates: Tensor, offset: int
    ) -> Tensor:
        """Each query's cross-entropy (..., Q) over its C candidates, query q's pair at column offset + q;
        halved (the base sums the two directions per pair), or divided by C (``candidate_mean``)."""
        log_probs = self.logits(sims).log_softmax(-1)
        share = sims.shape[-1] if self.candidate_mean else 2
        if self.targets == "hard":  # T = the identity: the diagonal, without a (Q, C) product
            return -log_probs.diagonal(offset, dim1=-2, dim2=-1) / share
        positives = positive_pairs(self.targets, candidates).to(sims.dtype)
        targets = target_distribution(positives, self.soft_weights(relevance), self.soft_weight)
        return -(targets * log_probs).sum(-1) / share

    def from_local_similarity(
        self,
        rows: Tensor,
        offset: int,
        relevance: Tensor | None = None,
        image_ids: Tensor | None = None,
    ) -> Tensor:
        """The loss of a worker's B pairs, global batch row ``offset`` on, from their (2, B, N) rows: its
        images against the N captions and its captions against the N images of the global batch (open_clip's
        ``local_loss``). ``relevance`` (N, N) and ``image_ids`` (N,) span the global batch. Over the workers,
        the mean of these losses is the global batch's loss (``reduction="mean"``), and with embeddings
        gathered with their gradient (`vse_ray.train.gather.gather_with_grad`) so is its gradient."""
        if rows.dim() != 3 or rows.shape[0] != 2 or not 0 <= offset <= rows.shape[2] - rows.shape[1]:
            raise ValueError(
                f"rows must be (2, B, N) with B + offset <= N, got {tuple(rows.shape)}, {offset}"
            )
        batch, n = rows.shape[1:]
        self._check_batch_inputs(n, relevance, image_ids)
        ids = torch.arange(n, device=rows.device) if image_ids is None else image_ids.to(rows.device)
        candidates = (ids[offset : offset + batch, None] != ids[None, :]).expand(2, batch, n)
        local = None
        if relevance is not None:
            relevance = relevance.detach().to(dtype=rows.dtype, device=rows.device)
            local = torch.stack((relevance[offset : offset + batch], relevance.T[offset : offset + batch]))
        return self.reduce(self._cross_entropy(rows, local, candidates, offset).sum(0))
