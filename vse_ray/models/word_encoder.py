"""Word features for cross-attention models: embedding → (Bi-)GRU → per-word L2 norm (SCAN Sec. 3.4)."""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from vse_ray.models.cross_attention import l2_normalize


class WordGRUEncoder(nn.Module):
    """Caption → (B, L, E) word features e_j: the mean of the two directions of a Bi-GRU, L2-normalised.

    SCAN (Sec. 3.4) and SGRAF (Sec. 4.2) use a Bi-GRU whose forward and backward hidden states are averaged,
    e_j = (h→_j + h←_j) / 2. Padding positions (beyond each length) are zero vectors.

    Args:
        vocab_size: Number of token ids (0 pads a batch).
        word_dim: Word embedding size (300 in both papers).
        embed_dim: GRU hidden size = feature size E (1024).
        bidirectional: Bi-GRU (True in both references' recipes) or a one-way GRU.
        dropout: Dropout on the word embeddings (SGRAF 0.4, SCAN 0).
        xavier_words: draw the embedding Xavier-uniform (CVSE's random start) instead of U(-0.1, 0.1)
            (SCAN, SGRAF, GSMN); either is drawn after the GRU, as released.
    """

    def __init__(
        self,
        vocab_size: int,
        word_dim: int,
        embed_dim: int,
        bidirectional: bool = True,
        dropout: float = 0.0,
        xavier_words: bool = False,
    ) -> None:
        super().__init__()
        if vocab_size < 2:
            raise ValueError(f"vocab_size must be >= 2, got {vocab_size}")
        # No padding_idx, as in the reference encoders: padded positions never reach the GRU (packed), and a
        # caption augmentation's replacement that draws id 0 trains row 0 like any other word.
        self.embed = nn.Embedding(vocab_size, word_dim)
        self.dropout = nn.Dropout(dropout)
        self.rnn = nn.GRU(word_dim, embed_dim, batch_first=True, bidirectional=bidirectional)
        if xavier_words:
            nn.init.xavier_uniform_(self.embed.weight)
        else:
            nn.init.uniform_(self.embed.weight, -0.1, 0.1)

    def forward(self, tokens: Tensor, lengths: Tensor) -> Tensor:
        """(B, L) token ids, (B,) lengths → (B, max(lengths), E) unit word vectors, zeros at padding."""
        packed = pack_padded_sequence(
            self.dropout(self.embed(tokens)),
            lengths.clamp(min=1).cpu(),
            batch_first=True,
            enforce_sorted=False,
        )
        out, _ = pad_packed_sequence(self.rnn(packed)[0], batch_first=True)
        if self.rnn.bidirectional:
            out = torch.stack(out.chunk(2, dim=-1)).mean(0)
        return l2_normalize(out)
