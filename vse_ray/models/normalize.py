"""Projection onto the unit hypersphere (VSE++ Sec. 2.2: both embeddings are normalised)."""

from __future__ import annotations

import torch


def l2_normalize(x: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """Row-wise x / ||x||_2, safe for zero rows."""
    return x / x.norm(dim=-1, keepdim=True).clamp(min=eps)
