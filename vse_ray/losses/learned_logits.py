"""The learned logit scale (and bias) of the contrastive losses, kept as open_clip keeps them.

CLIP (Radford et al. 2021, Sec. 2.5) learns the temperature of its softmax as a log-parameterised scale,
t = exp(logit_scale), started at 1/0.07 and clipped at 100; SigLIP (Zhai et al. 2023, Algorithm 1)
learns t' = log t with a bias b, started at t = 10 and b = -10. Here the loss module holds them as its own
parameters: the run's optimiser trains them (their own group, without weight decay, as open_clip excludes
them), its checkpoints save them with the loss's ``state_dict``, `after_step` clamps the scale to
[0, ln 100] as open_clip's training loop does after each step, and `start_from` starts them from a model's
own learned values (a CLIP checkpoint's) instead of the ``init_*`` hyper-parameters.

``scale_param="tau"`` learns the temperature itself, τ = 1/t, as CUSA does (Huang et al. AAAI 2024; its
released ``unire/model.py``: logits ``s / τ``, τ a parameter started at 0.05 and clamped to [0.01, 0.10]
before each step): Adam's steps then move τ rather than ln t, so the scale learns at another pace.
``scale_range`` bounds t in either parameterisation (open_clip's [1, 100]; CUSA's τ range is t in [10, 100]).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import cast

import torch
from torch import Tensor, nn

from vse_ray.losses.base import BaseVSELoss, given
from vse_ray.losses.targets import check_target_options, graded_weights

MAX_SCALE = 100.0  # open_clip: logit_scale.clamp_(0, ln 100) after every optimiser step
SCALE_PARAMS = ("log", "tau")  # what is learned: ln t (CLIP, open_clip) or τ = 1/t (CUSA)


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
        scale_param: "log": the parameter ``logit_scale`` is ln t; "tau": the parameter ``tau`` is 1/t.
        scale_range: (lowest, highest) t after each step, 0 < lowest < highest <= 100.
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
        scale_param: str = "log",
        scale_range: tuple[float, float] | list[float] = (1.0, MAX_SCALE),
    ) -> None:
        check_target_options(targets, temperature, soft_weight)
        if targets != "graded" and relevance_source is not None:
            raise ValueError(f"relevance_source: only graded targets use relevance, got targets={targets!r}")
        if not 0.0 < init_scale <= MAX_SCALE:
            raise ValueError(f"init_scale must be in (0, {MAX_SCALE:g}], got {init_scale}")
        if scale_param not in SCALE_PARAMS:
            raise ValueError(f"scale_param must be one of {SCALE_PARAMS}, got {scale_param!r}")
        if len(scale_range) != 2 or not 0.0 < scale_range[0] < scale_range[1] <= MAX_SCALE:
            raise ValueError(
                f"scale_range must be [lowest, highest] with 0 < lowest < highest <= 100, got {scale_range}"
            )
        super().__init__(reduction, relevance_source)
        if targets != "graded":
            self.relevance_source = None
        self.targets, self.temperature, self.soft_weight = targets, temperature, soft_weight
        self.model_scale = model_scale
        self.scale_range = (float(scale_range[0]), float(scale_range[1]))
        # ln t (named as open_clip and the checkpoints name it), or τ = 1/t (named as CUSA names it)
        self.scale_name = "logit_scale" if scale_param == "log" else "tau"
        start = math.log(init_scale) if scale_param == "log" else 1.0 / init_scale
        self.register_parameter(self.scale_name, nn.Parameter(torch.tensor(start)))
        self.logit_bias = None if init_bias is None else nn.Parameter(torch.tensor(float(init_bias)))

    @property
    def learned_scale(self) -> nn.Parameter:
        """The scale's parameter: ln t (``logit_scale``) or τ = 1/t (``tau``)."""
        return cast(nn.Parameter, getattr(self, self.scale_name))

    def scale(self) -> Tensor:
        """t, the logits' multiplier of the cosine."""
        learned = self.learned_scale
        return learned.exp() if self.scale_name == "logit_scale" else 1.0 / learned

    def logits(self, sims: Tensor) -> Tensor:
        """t · sims + b (the bias when the loss has one); sims / τ when τ is learned, as CUSA divides."""
        if self.scale_name == "tau":
            scaled = sims / self.learned_scale
            return scaled if self.logit_bias is None else scaled + self.logit_bias
        if self.logit_bias is None:
            return self.learned_scale.exp() * sims
        return torch.addcmul(self.logit_bias, sims, self.learned_scale.exp())  # b + t · s in one pass

    def _reduced_loss(self, sims: Tensor, relevance: Tensor | None, image_ids: Tensor | None) -> Tensor:
        if self.targets == "hard":  # the diagonal alone: neither relevance nor the negatives' mask is read
            return self.reduce(self.hard_loss(sims))
        return super()._reduced_loss(sims, relevance, image_ids)

    def hard_loss(self, sims: Tensor) -> Tensor:
        """Per-pair loss (B,) of the hard targets, from the (B, B) similarities."""
        raise NotImplementedError

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
                ln_t = float(learned["logit_scale"])
                self.learned_scale.fill_(ln_t if self.scale_name == "logit_scale" else math.exp(-ln_t))
            if self.logit_bias is not None and "logit_bias" in learned:
                self.logit_bias.fill_(float(learned["logit_bias"]))

    def learned_values(self) -> dict[str, float]:
        """t = exp(``logit_scale``) and b (when the loss has a bias): what a fine-tuning run watches drift."""
        values = {"logit_scale": self.scale().item()}
        return values if self.logit_bias is None else {**values, "logit_bias": self.logit_bias.item()}

    def after_step(self) -> None:
        """Keep t in ``scale_range`` after an optimiser step: ln t in [0, ln 100] by default, as open_clip
        clamps it; τ in [1/highest, 1/lowest], as CUSA clamps it (before the next step's forward)."""
        low, high = self.scale_range
        with torch.no_grad():
            if self.scale_name == "logit_scale":
                self.learned_scale.clamp_(math.log(low), math.log(high))
            else:
                self.learned_scale.clamp_(1.0 / high, 1.0 / low)
