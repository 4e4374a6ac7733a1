"""VSRN's caption generation (Li et al., ICCV 2019, Sec. 3.3 eq. 6): an attention GRU decoder that
generates the caption from the reasoned region features, trained by teacher forcing.

The reference implementation (KunpengLi1994/VSRN, an S2VT-style sequence model with attention):

- Region encoder: v'_r = Dropout(W_v v_r) for each reasoned region v_r (E wide), then a GRU of hidden size
  H over the regions; its outputs o_r are the attention memory and its last state starts the decoder.
- Decoder step t: context c_t = Σ_r α_tr o_r, α_t = softmax_r(w · tanh(W_a [o_r; h_{t-1}])); input
  Dropout([x_t; c_t]) with x_t the embedding of target word t; h_t = GRU(input, h_{t-1});
  p_t = softmax(W_o h_t) predicts target word t + 1.
- Loss (eq. 6, summed over words): L_G = -(1/B) Σ_b Σ_t m_bt log p_t(y_b,t+1), with the targets and mask of
  :func:`caption_targets`.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn import functional as F


def caption_targets(tokens: Tensor, lengths: Tensor, max_len: int, end_id: int) -> tuple[Tensor, Tensor]:
    """Teacher-forcing targets of captions stored as ``<start> w1 ... wn <end>`` ids: (B, T + 1) ids y and
    a (B, T + 1) float mask m, with T the decoding steps any caption needs.

    As the reference data loader: a caption longer than `max_len` tokens keeps its first `max_len` with the
    last replaced by ``<end>`` (`end_id`, as the data's vocabulary numbers it); y is zero-padded, and m
    covers the n kept tokens and the first padding position after them (the decoder also learns to emit
    padding after ``<end>``). The decoder runs `max_len` - 1 steps there; the steps after every caption's
    last masked target add nothing to the loss or its gradient, so they are not run."""
    kept = lengths.clamp(max=max_len)
    steps = min(max_len - 1, int(kept.max()))
    positions = torch.arange(steps + 1, device=tokens.device)
    width = min(steps + 1, tokens.shape[1])
    labels = torch.zeros(tokens.shape[0], steps + 1, dtype=tokens.dtype, device=tokens.device)
    labels[:, :width] = tokens[:, :width]
    labels = labels * (positions[None, :] < kept[:, None])
    if steps + 1 >= max_len:
        cut = lengths > max_len
        labels[cut, max_len - 1] = end_id
    mask = (positions[None, :] <= kept[:, None]).to(torch.float32)
    return labels, mask


class CaptionDecoder(nn.Module):
    """Region encoder + attention GRU decoder over (B, R, E) reasoned regions (see the module docstring).

    Args:
        vocab_size: Caption vocabulary size (the decoder's output classes).
        region_dim: Width E of the reasoned regions.
        end_id: Id of ``<end>`` in the captions' vocabulary (vse_ray's own: 3; a released one: 2), the last
            target of a caption cut at `max_len`.
        hidden_dim: Hidden size H of both GRUs (512 in the reference code).
        word_dim: Size of the decoder's word embeddings (300).
        max_len: Longest target sequence, ``<start>`` and ``<end>`` included (60).
        dropout: Dropout of the projected regions and of the decoder's inputs (0.2).
    """

    def __init__(
        self,
        vocab_size: int,
        region_dim: int,
        end_id: int,
        hidden_dim: int = 512,
        word_dim: int = 300,
        max_len: int = 60,
        dropout: float = 0.2,
    ):
        super().__init__()
        if max_len < 2:
            raise ValueError(f"max_len must be >= 2 (<start> and one target), got {max_len}")
        self.max_len, self.end_id = max_len, end_id
        # Drawn in the released order: the region encoder (its FC redrawn Xavier-normal after its GRU),
        # then the decoder (its output layer redrawn last).
        self.region_fc = nn.Linear(region_dim, hidden_dim)
        self.region_rnn = nn.GRU(hidden_dim, hidden_dim, batch_first=True)
        nn.init.xavier_normal_(self.region_fc.weight)
        self.embed = nn.Embedding(vocab_size, word_dim)
        self.attend = nn.Linear(2 * hidden_dim, hidden_dim)
        self.attend_score = nn.Linear(hidden_dim, 1, bias=False)
        self.rnn = nn.GRU(hidden_dim + word_dim, hidden_dim, batch_first=True)
        self.out = nn.Linear(hidden_dim, vocab_size)
        self.dropout = nn.Dropout(dropout)
        nn.init.xavier_normal_(self.out.weight)

    def _context(self, hidden: Tensor, memory: Tensor) -> Tensor:
        """(B, H) decoder state, (B, R, H) region memory → (B, H) attended context."""
        query = hidden[:, None, :].expand(-1, memory.shape[1], -1)
        logits = self.attend_score(torch.tanh(self.attend(torch.cat([memory, query], dim=2)))).squeeze(2)
        return torch.bmm(F.softmax(logits, dim=1)[:, None, :], memory).squeeze(1)

    def forward(self, regions: Tensor, labels: Tensor) -> Tensor:
        """(B, R, E) regions, (B, T + 1) target ids → (B, T, V) log-probabilities of targets 1..T."""
        memory, hidden = self.region_rnn(self.dropout(self.region_fc(regions)))
        words = self.embed(labels)
        states = []
        for t in range(labels.shape[1] - 1):
            step = torch.cat([words[:, t], self._context(hidden[0], memory)], dim=1)
            output, hidden = self.rnn(self.dropout(step)[:, None, :], hidden)
            states.append(output)
        return F.log_softmax(self.out(torch.cat(states, dim=1)), dim=2)

    def targets(self, tokens: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
        """Teacher-forcing targets and mask of captions (B, L) with lengths (B,): :func:`caption_targets`."""
        return caption_targets(tokens, lengths, self.max_len, self.end_id)

    def loss(self, regions: Tensor, tokens: Tensor, lengths: Tensor) -> Tensor:
        """Caption-generation loss L_G of captions (B, L) with lengths (B,) given their images' regions."""
        labels, mask = self.targets(tokens, lengths)
        logprobs = self(regions, labels)
        target_logp = logprobs.gather(2, labels[:, 1:, None]).squeeze(2)
        return -(target_logp * mask[:, 1:]).sum() / tokens.shape[0]
