"""SGRAF: Similarity Graph Reasoning and Attention Filtration (Diao et al., AAAI 2021), batched over pairs."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from vse_ray.models.cross_attention import (
    cross_attention_weights,
    l2_normalize,
    length_mask,
    region_word_logits,
)
from vse_ray.models.initial_weights import xavier_fill_
from vse_ray.models.pair_scoring import pairs_per_pass, score_pairs
from vse_ray.models.region_word import RegionWordModel
from vse_ray.models.sgraf_modules import (
    AttentionFiltration,
    GraphReasoning,
    TextSelfAttention,
    VisualSelfAttention,
)

SGRAF_MODULES = ("sgr", "saf")
# Default pairs per vectorised pass; a pass holds at least one caption against every image, so on a CPU
# it is one caption per pass at B >= 128 (bench_pair_scoring.py: 3x faster than 2,048 pairs per pass).
CPU_PAIRS, GPU_PAIRS = 128, 16384


class SGRAFModel(RegionWordModel):
    """SGR or SAF on vector similarity representations of global and local alignments.

    Similarity representation (paper Sec. "Similarity Representation Learning"):
    s(x, y; W) = W|x - y|² / ||W|x - y|²||₂. The global alignment s^g = s(v̂, t̂; W_g) compares the
    self-attended image and caption vectors; each word j gives a local alignment s^l_j = s(a^v_j, t_j; W_l),
    a^v_j the L2-normalised SCAN text-image attended region vector (λ = 9). The nodes {s^g, s^l_1..s^l_L} are
    reduced to one vector by SGR (``module="sgr"``: ``sgr_steps`` graph-reasoning steps, then the global node)
    or by SAF (``module="saf"``: attention filtration), and S(I, T) = σ(W_s ·). The paper's SGRAF is the two
    trained separately with their score matrices averaged at evaluation.

    Args:
        vocab_size, feature_dim, word_dim, embed_dim: vocabulary, region feature size D, word size, E.
        n_regions: regions per image R (the visual self-attention's batch norm has one channel per region).
        module: "sgr" or "saf".
        sim_dim: size S of the similarity representations (256).
        sgr_steps: graph-reasoning steps (3).
        lambda_softmax: λ of the text-image attention (9).
        dropout: dropout of the word embeddings and the self-attention branches (0.4).
        bidirectional: Bi-GRU caption encoder.
        max_pairs: image × caption pairs per vectorised block (bounds memory, not the result);
            None: ``CPU_PAIRS`` on a CPU, ``GPU_PAIRS`` on a GPU.
    """

    def __init__(
        self,
        *,
        vocab_size: int,
        feature_dim: int,
        word_dim: int = 300,
        embed_dim: int = 1024,
        n_regions: int = 36,
        module: str = "sgr",
        sim_dim: int = 256,
        sgr_steps: int = 3,
        lambda_softmax: float = 9.0,
        dropout: float = 0.4,
        bidirectional: bool = True,
        max_pairs: int | None = None,
    ) -> None:
        self.check_options(module=module, sgr_steps=sgr_steps, n_regions=n_regions)
        super().__init__(vocab_size, feature_dim, word_dim, embed_dim, bidirectional, dropout, n_regions)
        self.image_global = VisualSelfAttention(embed_dim, n_regions, dropout)
        self.text_global = TextSelfAttention(embed_dim, dropout)
        self.local_sim = nn.Linear(embed_dim, sim_dim)
        self.global_sim = nn.Linear(embed_dim, sim_dim)
        self.final = nn.Linear(sim_dim, 1)
        self.module = module
        if module == "sgr":
            self.reasoning = nn.ModuleList(GraphReasoning(sim_dim) for _ in range(sgr_steps))
        else:
            self.filtration = AttentionFiltration(sim_dim)
        # As the released similarity module: its own linear layers redrawn after the reasoning modules.
        for layer in (self.local_sim, self.global_sim, self.final):
            xavier_fill_(layer)
        self.lambda_softmax, self.max_pairs = lambda_softmax, max_pairs

    @staticmethod
    def check_options(module: str = "sgr", sgr_steps: int = 3, n_regions: int = 36, **_: object) -> None:
        """ValueError naming the first option SGRAF does not have (also run on recipes before training)."""
        if module not in SGRAF_MODULES:
            raise ValueError(f"module: SGRAF has the modules {SGRAF_MODULES}, got {module!r}")
        if sgr_steps < 1 or n_regions < 1:
            raise ValueError(f"sgr_steps and n_regions must be >= 1, got {sgr_steps}, {n_regions}")

    def score(self, img_repr: Tensor, txt_repr: Tensor, txt_lengths: Tensor | None = None) -> Tensor:
        """(N_img, N_txt) scores in [0, 1], in blocks of at most ``max_pairs`` pairs."""
        image_global = self.image_global(img_repr)  # once per call: its batch norm sees every image

        def block(regions: Tensor, words: Tensor, lengths: Tensor) -> Tensor:
            return self.score_block(regions, image_global, words, lengths)

        max_pairs = pairs_per_pass(self.max_pairs, img_repr.device, CPU_PAIRS, GPU_PAIRS)
        return score_pairs(block, img_repr, txt_repr, txt_lengths, max_pairs)

    def score_block(self, regions: Tensor, image_global: Tensor, words: Tensor, lengths: Tensor) -> Tensor:
        """All pairs of one block in one vectorised pass: (N_img, N_txt)."""
        word_mask = length_mask(lengths, words.shape[1])  # (N_txt, L)
        logits = region_word_logits(regions, words).transpose(-1, -2)  # (N_img, N_txt, L, R)
        weights = cross_attention_weights(logits, word_mask[None], None, self.lambda_softmax)
        attended = l2_normalize(weights @ regions[:, None])  # (N_img, N_txt, L, E)
        local = l2_normalize(self.local_sim((attended - words[None]).pow(2)))
        text_global = self.text_global(words, word_mask)
        glob = l2_normalize(self.global_sim((image_global[:, None] - text_global[None]).pow(2)))
        nodes = torch.cat([glob.unsqueeze(-2), local], dim=-2)  # (N_img, N_txt, L + 1, S)
        node_mask = torch.cat([word_mask.new_ones(word_mask.shape[0], 1), word_mask], dim=1)
        if self.module == "sgr":
            for step in self.reasoning:
                nodes = step(nodes, node_mask[None])
            vector = nodes[..., 0, :]
        else:
            vector = self.filtration(nodes, node_mask)
        return torch.sigmoid(self.final(vector)).squeeze(-1)

    def pair_floats(self, n_regions: int, n_words: int) -> int:
        """Floats held per pair at the peak of ``score_block`` (attended vectors, similarity nodes)."""
        embed, sim = self.local_sim.in_features, self.local_sim.out_features
        return n_words * (4 * embed + 3 * n_regions) + 8 * (n_words + 1) * (sim + n_words + 1)
