"""The learned logit scale (and bias) of the contrastive losses, kept as open_clip keeps them.

CLIP (Radford et al. 2021, Sec. 2.5) learns the temperature of its softmax as a log-parameterised scale,
t = exp(logit_scale), started at 1/0.07 and clipped at 100; SigLIP (Zhai et al. 2023, Algorithm 1)
learns t' = log t with a bias b, started at t = 10 and b = -10. Here the loss module holds them as its own
parameters: the run's optimiser trains them (their own group, without weight decay, as open_clip excludes
them), its checkpoints save them with the loss's ``state_dict``, `after_step` clamps the scale to
[0, ln 100] as open_clip's training loop does after each step, and `start_from` starts them from a model's
own learned values (a CLIP checkpoint's) instead of the ``init_*`` hyper-parameters.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch
from torch import Tensor, nn

from vse_ray.losses.base import BaseVSELoss, given
from vse_ray.losses.targets import check_target_options, graded_weights

MAX_SCALE = 100.0  # open_clip: logit_scale.clamp_(0, ln 100) after every optimiser step


class LearnedLogitsLoss(BaseVSELoss):
    """A loss on logits t · s_ij (+ b) with learned t = exp(``logit_scale``) (and b = ``logit_bias``).

    Args:
        targets: "hard" | "multi" | "graded" (`vse_ray.losses.targets`).
        temperature: τ of the graded weights exp((r_ij - max_k r_ik) / τ) (graded only).
        soft_weight: λ, the graded targets' share against the positives' (graded only), in [0, 1].
        init_scale: t at the start, in (0, 100].
        init_bias: b at the start; None: the loss has no bias.
        model_scale: start from the model's own learned scale (and bias) when it exposes them (`start_from`);
            False: always from ``init_scale`` / ``init_bias``.
        reduction: see BaseVSELoss.
        relevance_source: the graded targets' relevance (default 'sbert'); the other modes use none.
    """

    relevance_source: str | None = "sbert"

    def __init__(
        self,
        targets: str,
        temperature: float,
        soft_weight: float,
        init_scale: float,
        init_bias: float | None,
        model_scale: bool,
        reduction: str,
        relevance_source: str | None,
    ) -> None:
        check_target_options(targets, temperature, soft_weight)
        if targets != "graded" and relevance_source is not None:
            raise ValueError(f"relevance_source: only graded targets use relevance, got targets={targets!r}")
        if not 0.0 < init_scale <= MAX_SCALE:
            raise ValueError(f"init_scale must be in (0, {MAX_SCALE:g}], got {init_scale}")
        super().__init__(reduction, relevance_source)
        if targets != "graded":
            self.relevance_source = None
        self.targets, self.temperature, self.soft_weight = targets, temperature, soft_weight
        self.model_scale = model_scale
        self.logit_scale = nn.Parameter(torch.tensor(math.log(init_scale)))
        self.logit_bias = None if init_bias is None else nn.Parameter(torch.tensor(float(init_bias)))

    def logits(self, sims: Tensor) -> Tensor:
        """t · sims + b (the bias when the loss has one)."""
        scaled = self.logit_scale.exp() * sims
        return scaled if self.logit_bias is None else scaled + self.logit_bias

    def soft_weights(self, relevance: Tensor | None) -> Tensor | None:
        """The graded weights of query-major ``relevance`` (graded targets), else None."""
        return None if self.targets != "graded" else graded_weights(given(relevance), self.temperature)

    def start_from(self, learned: Mapping[str, float]) -> None:
        """Start ``logit_scale`` (ln t) and ``logit_bias`` from a model's learned values (keys as in open_clip
        and transformers' CLIP and SigLIP checkpoints), unless ``model_scale`` is False."""
        if not self.model_scale:
            return
        with torch.no_grad():
            if "logit_scale" in learned:
                self.logit_scale.fill_(float(learned["logit_scale"]))
            if self.logit_bias is not None and "logit_bias" in learned:
                self.logit_bias.fill_(float(learned["logit_bias"]))

    def learned_values(self) -> dict[str, float]:
        """t = exp(``logit_scale``) and b (when the loss has a bias): what a fine-tuning run watches drift."""
        values = {"logit_scale": self.logit_scale.exp().item()}
        return values if self.logit_bias is None else {**values, "logit_bias": self.logit_bias.item()}

    def after_step(self) -> None:
        """Clamp ln t to [0, ln 100] after an optimiser step, as open_clip does."""
        with torch.no_grad():
            self.logit_scale.clamp_(0.0, math.log(MAX_SCALE))
