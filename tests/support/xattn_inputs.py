"""Tiny region/word inputs for the cross-attention model tests."""

from __future__ import annotations

import torch
from torch import Tensor


def region_word_batch(
    n_img: int = 3, n_txt: int = 4, n_regions: int = 5, dim: int = 6, seed: int = 0
) -> tuple[Tensor, Tensor, Tensor]:
    """(regions (n_img, R, E), words (n_txt, L, E), lengths): unit float64 vectors, zero padding."""
    gen = torch.Generator().manual_seed(seed)
    regions = torch.nn.functional.normalize(
        torch.randn(n_img, n_regions, dim, generator=gen, dtype=torch.float64), dim=-1
    )
    lengths = torch.tensor([4, 2, 3, 1, 4, 2][:n_txt])
    words = torch.nn.functional.normalize(
        torch.randn(n_txt, 4, dim, generator=gen, dtype=torch.float64), dim=-1
    )
    words = words * (torch.arange(4)[None, :, None] < lengths[:, None, None])
    return regions, words, lengths


def token_batch(n: int, vocab: int, seed: int = 0) -> tuple[Tensor, Tensor]:
    """(tokens (n, L) with 0 padding, lengths (n,)) of random captions of 2..6 words."""
    gen = torch.Generator().manual_seed(seed)
    lengths = torch.randint(2, 7, (n,), generator=gen)
    tokens = torch.randint(1, vocab, (n, int(lengths.max())), generator=gen)
    return tokens * (torch.arange(tokens.shape[1]) < lengths[:, None]), lengths
