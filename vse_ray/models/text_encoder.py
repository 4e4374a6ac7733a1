"""GRU caption encoder ψ (VSE++ Sec. 2.2 eq. 2, Sec. 3: word dim 300, GRU/embedding dim 1024)."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from vse_ray.models.normalize import l2_normalize


class GRUTextEncoder(nn.Module):
    """Word embedding → GRU → last hidden state → L2 norm (the GRU hidden size is the joint dim D).

    Args:
        vocab_size: Number of token ids (0 pads a batch).
        word_dim: Word embedding size (300 in VSE++).
        embed_dim: GRU hidden size = joint embedding size D (1024 in VSE++).
        num_layers: GRU layers.
    """

    def __init__(self, vocab_size: int, word_dim: int = 300, embed_dim: int = 1024, num_layers: int = 1):
        super().__init__()
        if vocab_size < 2:
            raise ValueError(f"vocab_size must be >= 2, got {vocab_size}")
        # No padding_idx, as in the reference encoders: padded positions never reach the GRU (packed), and a
        # caption augmentation's replacement that draws id 0 trains row 0 like any other word.
        self.embed = nn.Embedding(vocab_size, word_dim)
        self.rnn = nn.GRU(word_dim, embed_dim, num_layers, batch_first=True)
        nn.init.uniform_(self.embed.weight, -0.1, 0.1)

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Encode padded token ids (B, L) with true lengths (B,) into unit vectors (B, D)."""
        packed = pack_padded_sequence(
            self.embed(tokens), lengths.clamp(min=1).cpu(), batch_first=True, enforce_sorted=False
        )
        _, hidden = self.rnn(packed)
        return l2_normalize(hidden[-1])
