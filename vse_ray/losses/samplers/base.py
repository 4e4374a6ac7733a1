"""The contract every index sampler returns: picked columns per query plus a validity flag."""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor


class Selection(NamedTuple):
    """Columns picked for each query row of a (..., Q, C) score matrix.

    Attributes:
        columns: (..., Q, K) int64 column indices (K picks per query; K = 1 for single-negative samplers).
        valid: (..., Q, K) bool, False where the candidate set was empty (the index is then arbitrary).
    """

    columns: Tensor
    valid: Tensor

    def gather(self, values: Tensor) -> Tensor:
        """Entries of ``values`` (..., Q, C) at the picked columns, (..., Q, K); differentiable."""
        return values.expand(*self.columns.shape[:-1], values.shape[-1]).gather(-1, self.columns)


def check_scores_and_mask(scores: Tensor, mask: Tensor, mask_name: str = "candidates") -> None:
    """Raise ValueError unless ``scores`` is a floating (..., Q, C) tensor and ``mask`` a bool one alike."""
    if not scores.is_floating_point() or scores.dim() < 2:
        raise ValueError(f"scores must be a floating tensor of shape (..., Q, C), got {tuple(scores.shape)}")
    if mask.dtype != torch.bool or mask.shape != scores.shape:
        raise ValueError(
            f"{mask_name} must be a bool tensor of shape {tuple(scores.shape)}, got {mask.dtype} "
            f"{tuple(mask.shape)}"
        )


def check_selection(selection: Selection, query_shape: torch.Size) -> Selection:
    """Raise ValueError unless ``selection`` holds (..., Q, K) int64 indices and bool flags."""
    columns, valid = selection
    if columns.dtype != torch.int64 or valid.dtype != torch.bool or columns.shape != valid.shape:
        raise ValueError("a sampler must return int64 columns and bool valid tensors of the same shape")
    if columns.shape[:-1] != query_shape:
        raise ValueError(
            f"a sampler must return shape {tuple(query_shape)} + (K,), got {tuple(columns.shape)}"
        )
    return selection


class BaseSampler:
    """Picks one column per query among ``candidates``, without gradient; subclasses implement ``select``."""

    def __call__(self, scores: Tensor, candidates: Tensor) -> Selection:
        """Select columns of ``scores`` (..., Q, C) among the True entries of ``candidates`` (..., Q, C)."""
        check_scores_and_mask(scores, candidates)
        with torch.no_grad():
            selection = self.select(scores.detach(), candidates)
        return check_selection(selection, scores.shape[:-1])

    def select(self, scores: Tensor, candidates: Tensor) -> Selection:
        """Return a Selection with K = 1 (called under ``no_grad`` on validated inputs)."""
        raise NotImplementedError


def best_column(keys: Tensor, candidates: Tensor) -> Selection:
    """Column of the largest key among the candidates of each row, as a K = 1 Selection."""
    index = keys.masked_fill(~candidates, float("-inf")).argmax(-1, keepdim=True)
    return Selection(index, candidates.any(-1, keepdim=True))
