"""The cosine relevance of caption vectors (S-BERT, TF-IDF + SVD) within a training batch."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def caption_cosine(name: str, vectors: torch.Tensor | None) -> torch.Tensor:
    """``R[i, j] = cos(v_i, v_j)``: caption i stands for image i (ladder eq. 1, LSEH eq. 6)."""
    if vectors is None:
        raise ValueError(f"batch_relevance(source={name!r}) needs (B, d) caption vectors")
    if vectors.ndim != 2:
        raise ValueError(f"{name} must have shape (B, d), got {tuple(vectors.shape)}")
    unit = F.normalize(vectors, dim=1)
    return unit @ unit.T
