"""CVSE's parts (Wang et al., ECCV 2020): caption self-attention, the concept GCN and the consensus level."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from vse_ray.models.cross_attention import l2_normalize
from vse_ray.models.initial_weights import draw_unused_linear, xavier_linear
from vse_ray.models.sgraf_modules import TextSelfAttention, VisualSelfAttention

# Temperature of the concept scores: softmax(10 · score) (the released `smooth_coef`).
CONCEPT_SHARPNESS = 10.0


class ReleasedVisualSelfAttention(VisualSelfAttention):
    """`VisualSelfAttention` as the released CVSE builds it: PyTorch's default initialisation (build it with
    ``xavier=False``), and two more layers drawn among its three that the released forward never reads."""

    @staticmethod
    def draw_layers(embed_dim: int) -> tuple[nn.Linear, nn.Linear, nn.Linear]:
        """fc1 (local), fc2 (global), fc2_2 (unused), fc3 (common), fc4 (unused), in this order."""
        local, glob = nn.Linear(embed_dim, embed_dim), nn.Linear(embed_dim, embed_dim)
        draw_unused_linear(embed_dim, embed_dim)
        common = nn.Linear(embed_dim, 1)
        draw_unused_linear(embed_dim, embed_dim)
        return local, glob, common


class GuidedTextSelfAttention(TextSelfAttention):
    """Instance-level caption vector: the self-attention of `TextSelfAttention`, guided by the L2-normalised
    mean of the word vectors (CVSE Sec. 3.1: the textual "initial memory")."""

    def forward(self, words: Tensor, mask: Tensor) -> Tensor:
        """(N_txt, L, E) words (zeros at padding), (N_txt, L) mask → (N_txt, E)."""
        guide = l2_normalize(words.sum(1))  # the direction of the mean over every position
        gate = self.local(words) * self.glob(guide).unsqueeze(1)
        logits = self.common(gate).squeeze(-1).masked_fill(~mask, float("-inf"))
        return l2_normalize((torch.softmax(logits, dim=-1).unsqueeze(-1) * words).sum(1))


def normalized_adjacency(adjacency: Tensor) -> Tensor:
    """Â = D^-1/2 Aᵀ D^-1/2 with D = diag(row sums of A), in float32 (the released `gen_adj`)."""
    a = adjacency.float()
    d = torch.diag(a.sum(1).pow(-0.5))
    return (a @ d).T @ d


class ConceptGCN(nn.Module):
    """Concept representations (CVSE eq. 4): two graph convolutions over the concept graph,
    Z = l2norm(Â LeakyReLU_0.2(Â X W₁) W₂), from the concepts' input vectors X (K, concept_dim).

    Args:
        concept_dim: size of the concepts' input vectors (300, GloVe).
        embed_dim: size E of the concept representations (the first layer has E / 2).
    """

    def __init__(self, concept_dim: int, embed_dim: int) -> None:
        super().__init__()
        self.weight1 = nn.Parameter(torch.empty(concept_dim, embed_dim // 2))
        self.weight2 = nn.Parameter(torch.empty(embed_dim // 2, embed_dim))
        for weight in (self.weight1, self.weight2):
            bound = 1.0 / math.sqrt(weight.shape[1])
            nn.init.uniform_(weight, -bound, bound)
        self.relu = nn.LeakyReLU(0.2)
        xavier_linear(embed_dim, embed_dim)  # the released `joint_att_emb`: drawn, redrawn, never read

    def forward(self, inputs: Tensor, adjacency: Tensor) -> Tensor:
        """(K, concept_dim) input vectors, (K, K) normalised adjacency → (K, E) unit concept vectors."""
        hidden = self.relu(adjacency @ (inputs @ self.weight1))
        return l2_normalize(adjacency @ (hidden @ self.weight2))


class ConsensusLevel(nn.Module):
    """Consensus-level embedding of one modality (CVSE eqs. 5-7).

    Concept scores a_k = w·[tanh(BN(W_c z_k)) ⊙ tanh(BN(W_i x))] + b for the instance vector x, predicted
    distribution p = softmax(10 a); captions mix in their concept labels y: p ← r softmax(10 y) + (1 - r) p.
    The consensus vector is l2norm(Σ_k p_k z_k). As in the released code the concepts' batch norm normalises
    over the K concepts.
    """

    def __init__(self, embed_dim: int) -> None:
        super().__init__()
        self.concept = nn.Sequential(nn.Linear(embed_dim, embed_dim), nn.BatchNorm1d(embed_dim), nn.Tanh())
        self.instance = nn.Sequential(nn.Linear(embed_dim, embed_dim), nn.BatchNorm1d(embed_dim), nn.Tanh())
        self.score = nn.Linear(embed_dim, 1)

    def forward(
        self, instance: Tensor, concepts: Tensor, labels: Tensor | None = None, label_ratio: float = 0.0
    ) -> tuple[Tensor, Tensor]:
        """(B, E) instance vectors, (K, E) concepts, optional (B, K) labels → (B, E) consensus vectors and
        the (B, K) concept distribution."""
        gate = self.concept(concepts).unsqueeze(0) * self.instance(instance).unsqueeze(1)  # (B, K, E)
        scores = torch.softmax(self.score(gate).squeeze(-1) * CONCEPT_SHARPNESS, dim=-1)
        if labels is not None:
            prior = torch.softmax(labels * CONCEPT_SHARPNESS, dim=-1)
            scores = label_ratio * prior + (1 - label_ratio) * scores
        return l2_normalize(scores @ l2_normalize(concepts)), scores
