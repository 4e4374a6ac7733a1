"""SGRAF's parts (Diao et al., AAAI 2021): global self-attention, SGR and SAF, batched over pairs.

Every module takes pair-major tensors (..., N, S): N alignment nodes (the global one first, then one per word)
with a node mask, so the (N_img, N_txt) pairs of a block are reasoned on in one pass.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from vse_ray.models.cross_attention import EPS, l2_normalize
from vse_ray.models.initial_weights import xavier_fill_


def masked_softmax(logits: Tensor, mask: Tensor | None, dim: int = -1) -> Tensor:
    """Softmax over ``dim`` with positions where ``mask`` is False left out (weight 0)."""
    if mask is not None:
        logits = logits.masked_fill(~mask, float("-inf"))
    return torch.softmax(logits, dim=dim)


class VisualSelfAttention(nn.Module):
    """Global image vector v̂: self-attention over regions guided by their mean (SGRAF, Sec. 3.1).

    w_i = softmax_i(W_c [tanh(BN(W_l v_i)) ⊙ tanh(BN(W_g v̄))]), v̂ = l2norm(Σ_i w_i v_i), v̄ = mean_i v_i.
    As in the reference code the local branch's batch norm has one channel per region index.

    Args:
        embed_dim, n_regions, dropout: the region width E, regions per image R, the branches' dropout.
        xavier: redraw the three layers Xavier-uniform after building them (SGRAF's ``init_weights``);
            False keeps PyTorch's default draw (CVSE's attention).
    """

    def __init__(self, embed_dim: int, n_regions: int, dropout: float, xavier: bool = True) -> None:
        super().__init__()
        local, glob, common = self.draw_layers(embed_dim)
        self.local = nn.Sequential(local, nn.BatchNorm1d(n_regions), nn.Tanh(), nn.Dropout(dropout))
        self.glob = nn.Sequential(glob, nn.BatchNorm1d(embed_dim), nn.Tanh(), nn.Dropout(dropout))
        self.common = common
        if xavier:
            for layer in (local, glob, common):
                xavier_fill_(layer)

    @staticmethod
    def draw_layers(embed_dim: int) -> tuple[nn.Linear, nn.Linear, nn.Linear]:
        """The local, global and common layers, drawn in this order."""
        return nn.Linear(embed_dim, embed_dim), nn.Linear(embed_dim, embed_dim), nn.Linear(embed_dim, 1)

    def forward(self, regions: Tensor) -> Tensor:
        """(N_img, R, E) → (N_img, E)."""
        gate = self.local(regions) * self.glob(regions.mean(1)).unsqueeze(1)
        weights = torch.softmax(self.common(gate).squeeze(-1), dim=-1)
        return l2_normalize((weights.unsqueeze(-1) * regions).sum(1))


class TextSelfAttention(nn.Module):
    """Global caption vector t̂, the same self-attention over its words (no batch norm), padding left out;
    `xavier` as for `VisualSelfAttention`."""

    def __init__(self, embed_dim: int, dropout: float, xavier: bool = True) -> None:
        super().__init__()
        local, glob, common = VisualSelfAttention.draw_layers(embed_dim)
        self.local = nn.Sequential(local, nn.Tanh(), nn.Dropout(dropout))
        self.glob = nn.Sequential(glob, nn.Tanh(), nn.Dropout(dropout))
        self.common = common
        if xavier:
            for layer in (local, glob, common):
                xavier_fill_(layer)

    def forward(self, words: Tensor, mask: Tensor) -> Tensor:
        """(N_txt, L, E) words, (N_txt, L) mask → (N_txt, E)."""
        mean = (words * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True)
        gate = self.local(words) * self.glob(mean).unsqueeze(1)
        weights = masked_softmax(self.common(gate).squeeze(-1), mask)
        return l2_normalize((weights.unsqueeze(-1) * words).sum(1))


class GraphReasoning(nn.Module):
    """One step of Similarity Graph Reasoning (SGRAF, Sec. "SGR Module").

    Edges e_pq = softmax_q((W_in s_p)·(W_out s_q)); nodes s_p ← ReLU(W_r Σ_q e_pq s_q).
    """

    def __init__(self, sim_dim: int) -> None:
        super().__init__()
        self.query = nn.Linear(sim_dim, sim_dim)
        self.key = nn.Linear(sim_dim, sim_dim)
        self.update = nn.Linear(sim_dim, sim_dim)
        for layer in (self.query, self.key, self.update):  # redrawn after all three are built, as released
            xavier_fill_(layer)

    def forward(self, nodes: Tensor, mask: Tensor) -> Tensor:
        """(..., N, S) nodes, (..., N) mask → (..., N, S); padded nodes are never neighbours."""
        edges = masked_softmax(self.query(nodes) @ self.key(nodes).transpose(-1, -2), mask.unsqueeze(-2))
        return torch.relu(self.update(edges @ nodes))


class CaptionBatchNorm(nn.Module):
    """BatchNorm1d(1) whose training statistics are taken per caption, over its images and real nodes.

    The reference scores one caption against all images at a time, so SAF's batch norm sees that caption's
    (N_img × (L_t + 1)) values and updates its running estimates once per caption, in caption order. This does
    the same for all captions at once (running r ← (1-m)^T r + Σ_t m (1-m)^(T-t) x_t, unbiased variance).
    """

    running_mean: Tensor
    running_var: Tensor
    num_batches_tracked: Tensor

    def __init__(self, momentum: float = 0.1, eps: float = 1e-5) -> None:
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.weight = nn.Parameter(torch.ones(1))
        self.bias = nn.Parameter(torch.zeros(1))
        self.register_buffer("running_mean", torch.zeros(1))
        self.register_buffer("running_var", torch.ones(1))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        """x (N_img, N_txt, N), mask (N_txt, N) broadcast over images → normalised x."""
        if not self.training:
            mean, var = self.running_mean, self.running_var
        else:
            weights = mask.to(x.dtype).expand_as(x)
            count = weights.sum((0, 2))  # values per caption
            mean = (x * weights).sum((0, 2)) / count
            var = ((x - mean[None, :, None]).pow(2) * weights).sum((0, 2)) / count
            self._update_running(mean.detach(), var.detach() * count / (count - 1).clamp(min=1))
            mean, var = mean[None, :, None], var[None, :, None]
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias

    @torch.no_grad()
    def _update_running(self, means: Tensor, variances: Tensor) -> None:
        m, n = self.momentum, means.shape[0]
        decay = (1 - m) ** torch.arange(n - 1, -1, -1, dtype=means.dtype, device=means.device)
        self.running_mean.mul_((1 - m) ** n).add_(m * (decay * means).sum())
        self.running_var.mul_((1 - m) ** n).add_(m * (decay * variances).sum())
        self.num_batches_tracked.add_(n)


class AttentionFiltration(nn.Module):
    """Similarity Attention Filtration (SGRAF, Sec. "SAF Module").

    α_p = σ(BN(W_f s_p)) / Σ_q σ(BN(W_f s_q)), s_f = l2norm(Σ_p α_p s_p).
    """

    def __init__(self, sim_dim: int) -> None:
        super().__init__()
        self.gate = nn.Linear(sim_dim, 1)
        self.bn = CaptionBatchNorm()
        xavier_fill_(self.gate)

    def forward(self, nodes: Tensor, mask: Tensor) -> Tensor:
        """(N_img, N_txt, N, S) nodes, (N_txt, N) mask → (N_img, N_txt, S)."""
        gates = torch.sigmoid(self.bn(self.gate(nodes).squeeze(-1), mask)) * mask
        weights = gates / (gates.sum(-1, keepdim=True) + EPS)
        return l2_normalize((weights.unsqueeze(-1) * nodes).sum(-2))
