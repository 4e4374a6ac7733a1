"""Projection onto the unit hypersphere (VSE++ Sec. 2.2: both embeddings are normalised)."""

from __future__ import annotations

import torch


def l2_normalize(x: torch.Tensor, eps: float = 1e-8, dim: int = -1) -> torch.Tensor:
    """x / ||x||_2 along `dim` (rows by default), safe for zero vectors."""
    return x / x.norm(dim=dim, keepdim=True).clamp(min=eps)
