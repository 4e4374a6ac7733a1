"""Template for every VSE loss: similarity matrix once, checks, one hook, reduction."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import Tensor, nn

from vse_ray.relevance.sources import TRAINING_SOURCES

REDUCTIONS = ("sum", "mean", "none")


def negative_mask(batch_size: int, image_ids: Tensor | None, device: torch.device) -> Tensor:
    """(B, B) bool: True where caption j is a negative of image i: j != i and image_ids[j] != image_ids[i]."""
    eye = torch.eye(batch_size, dtype=torch.bool, device=device)
    if image_ids is None:
        return ~eye
    return image_ids[:, None] != image_ids[None, :]


def check_non_negative(**values: float | Sequence[float]) -> None:
    """Raise ValueError naming the first parameter that is negative (margins, weights)."""
    for name, value in values.items():
        items = value if isinstance(value, tuple | list) else (value,)
        if any(v < 0 for v in items):
            raise ValueError(f"{name} must be >= 0, got {value}")


def given(relevance: Tensor | None) -> Tensor:
    """The relevance of a loss with a relevance source, which the batch checks required."""
    if relevance is None:
        raise ValueError("relevance: this loss needs it, got None")
    return relevance


class BaseVSELoss(nn.Module):
    """Bidirectional image-text ranking loss over a batch of B positive pairs (row b of each input).

    ``forward`` validates inputs, builds ``sims = img_emb @ txt_emb.T`` once, and calls ``compute_loss``,
    which by default stacks both directions as query-major matrices of shape (2, B, B) - image->text
    (``sims``, ``relevance``) and text->image (``sims.T``, ``relevance.T``) - and sums the per-query
    results of ``query_loss``. The positive of query q is column q in both directions.

    The class attribute ``relevance_source`` is the family's default relevance (None: the loss uses none);
    a graded loss built with ``relevance_source=...`` trains on that source instead (instance attribute).

    Args:
        reduction: "sum" over the batch (as VSE++ does), "mean", or "none" (per-pair losses, shape (B,)).
        relevance_source: Relevance this loss trains on, one of TRAINING_SOURCES; None = the family default.
    """

    relevance_source: str | None = None

    def __init__(self, reduction: str = "sum", relevance_source: str | None = None) -> None:
        super().__init__()
        if reduction not in REDUCTIONS:
            raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
        if relevance_source is not None:
            if type(self).relevance_source is None:
                raise ValueError(f"relevance_source: {type(self).__name__} uses no relevance")
            if relevance_source not in TRAINING_SOURCES:
                raise ValueError(
                    f"relevance_source must be one of {TRAINING_SOURCES}, got {relevance_source!r}"
                )
            self.relevance_source = relevance_source
        self.reduction = reduction

    def forward(
        self,
        img_emb: Tensor,
        txt_emb: Tensor,
        relevance: Tensor | None = None,
        image_ids: Tensor | None = None,
    ) -> Tensor:
        """Loss of a batch: img_emb, txt_emb (B, D) L2-normalised; relevance (B, B); image_ids (B,)."""
        self._check_inputs(img_emb, txt_emb, relevance, image_ids)
        return self._reduced_loss(img_emb @ txt_emb.T, relevance, image_ids)

    def from_similarity(
        self, sims: Tensor, relevance: Tensor | None = None, image_ids: Tensor | None = None
    ) -> Tensor:
        """Loss of a batch given its (B, B) image x caption similarity matrix instead of embeddings.

        For similarity models (SCAN, SGRAF) whose learned function scores each pair: ``sims[i, j]`` is the
        score of image i with caption j, row b's positive in column b. Same samplers, both directions and
        reduction as ``forward``, which is ``from_similarity(img_emb @ txt_emb.T, ...)``.
        """
        if sims.dim() != 2 or sims.shape[0] != sims.shape[1] or not sims.is_floating_point():
            raise ValueError(f"sims must be a floating square (B, B) tensor, got shape {tuple(sims.shape)}")
        self._check_batch_inputs(sims.shape[0], relevance, image_ids)
        return self._reduced_loss(sims, relevance, image_ids)

    def _reduced_loss(self, sims: Tensor, relevance: Tensor | None, image_ids: Tensor | None) -> Tensor:
        if relevance is not None:
            relevance = relevance.detach().to(dtype=sims.dtype, device=sims.device)
        if image_ids is not None:
            image_ids = image_ids.to(sims.device)
        return self.reduce(
            self.compute_loss(sims, relevance, negative_mask(sims.shape[0], image_ids, sims.device))
        )

    def reduce(self, per_pair: Tensor) -> Tensor:
        """The per-pair losses (B,) summed, averaged or kept (``reduction``)."""
        if self.reduction == "sum":
            return per_pair.sum()
        return per_pair.mean() if self.reduction == "mean" else per_pair

    def compute_loss(self, sims: Tensor, relevance: Tensor | None, neg_mask: Tensor) -> Tensor:
        """Per-pair loss (B,): image->text plus text->image terms of ``query_loss``."""
        stacked_sims = torch.stack((sims, sims.T))
        stacked_rel = None if relevance is None else torch.stack((relevance, relevance.T))
        return self.query_loss(stacked_sims, stacked_rel, torch.stack((neg_mask, neg_mask.T))).sum(0)

    def query_loss(self, sims: Tensor, relevance: Tensor | None, candidates: Tensor) -> Tensor:
        """Loss per query (..., Q) from query-major sims, relevance and negatives mask, each (..., Q, C)."""
        raise NotImplementedError

    def start_from(self, learned: Mapping[str, float]) -> None:
        """Start the loss's own learned parameters from a model's values by name (a CLIP checkpoint's
        ``logit_scale``); a loss without any ignores them."""

    def after_step(self) -> None:
        """Keep the loss's own learned parameters in range after an optimiser step (none here)."""

    def learned_values(self) -> dict[str, float]:
        """The loss's own learned values by name, reported each epoch (none here)."""
        return {}

    def _check_inputs(
        self, img_emb: Tensor, txt_emb: Tensor, relevance: Tensor | None, image_ids: Tensor | None
    ) -> None:
        if img_emb.dim() != 2 or not img_emb.is_floating_point():
            raise ValueError(f"img_emb must be a floating (B, D) tensor, got shape {tuple(img_emb.shape)}")
        if txt_emb.shape != img_emb.shape or txt_emb.dtype != img_emb.dtype:
            raise ValueError(
                f"txt_emb must match img_emb's shape {tuple(img_emb.shape)} and dtype {img_emb.dtype}, "
                f"got {tuple(txt_emb.shape)} {txt_emb.dtype}"
            )
        self._check_batch_inputs(img_emb.shape[0], relevance, image_ids)

    def _check_batch_inputs(self, batch: int, relevance: Tensor | None, image_ids: Tensor | None) -> None:
        if relevance is None and self.relevance_source is not None:
            raise ValueError(
                f"relevance is required by {type(self).__name__} (source {self.relevance_source!r}), got None"
            )
        if relevance is not None:
            if relevance.shape != (batch, batch):
                raise ValueError(
                    f"relevance must have shape ({batch}, {batch}), got {tuple(relevance.shape)}"
                )
            # one reduction in the common case; the element check only when the sum is not finite
            if not torch.isfinite(relevance.sum()) and not torch.isfinite(relevance).all():
                raise ValueError("relevance contains non-finite values")
        if image_ids is not None and (image_ids.shape != (batch,) or image_ids.is_floating_point()):
            raise ValueError(
                f"image_ids must be an integer tensor of shape ({batch},), got {tuple(image_ids.shape)}"
            )


class MarginVSELoss(BaseVSELoss):
    """A BaseVSELoss with one fixed triplet margin α >= 0 (VSE0, VSE++).

    Args:
        margin: α (default 0.2).
        reduction: see BaseVSELoss.
    """

    def __init__(self, margin: float = 0.2, reduction: str = "sum") -> None:
        super().__init__(reduction)
        check_non_negative(margin=margin)
        self.margin = margin
