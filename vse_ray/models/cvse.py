"""CVSE: Consensus-aware Visual-Semantic Embedding (Wang et al., ECCV 2020), as released code trains it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

import numpy as np
import torch
from torch import Tensor

from vse_ray.models.cross_attention import l2_normalize, length_mask
from vse_ray.models.cvse_completion import complete_labels, completion_neighbours
from vse_ray.models.cvse_modules import (
    ConceptGCN,
    ConsensusLevel,
    GuidedTextSelfAttention,
    ReleasedVisualSelfAttention,
    normalized_adjacency,
)
from vse_ray.models.region_input import check_region_features
from vse_ray.models.region_word import RegionWordModel
from vse_ray.models.training_output import TrainingOutput

# The two released codes of CVSE (docs/cvse.md): the copy inside SAM's code
# (AndresPMD/semantic_adaptive_margin) and the authors' own (BruceW91/CVSE).
READINGS = ("sam_copy", "released")
TRAIN_ALPHA = {"sam_copy": 0.75, "released": 0.85}
RELEASED_EVAL_ALPHA = {"f30k": 0.85, "coco": 0.9}  # evaluation.py's fuse weight per dataset
RELEASED_FUSED_SCORE = 0.95  # released score: 0.95 · fused cosine + 0.05 · consensus cosine
DEFAULT_CONCEPTS = 300  # K, the released concept count


class CVSEModel(RegionWordModel):
    """Instance-level and consensus-level embeddings of images and captions, fused.

    - Instance level (Sec. 3.1): regions W_v f_r and Bi-GRU words, each L2-normalised, reduced by
      self-attention guided by their mean (`VisualSelfAttention`, `GuidedTextSelfAttention`).
    - Consensus level (Secs. 3.2-3.3): the K concepts' input vectors (GloVe, or random offline) go through
      two graph convolutions over the re-weighted co-occurrence graph (`ConceptGCN`); each instance vector
      predicts a distribution over the concepts (`ConsensusLevel`) and the consensus vector is the concepts
      weighted by it. A caption mixes in its concept labels (the concept words it holds) with `label_ratio`.
    - Fusion (Sec. 3.4): l2norm(α · instance + (1 - α) · consensus), α = `fuse_alpha`; retrieval scores the
      fused vectors by cosine.

    Two readings (`reading`) of the released code differ in fusion and evaluation (docs/cvse.md):

    - ``sam_copy`` (SAM's copy): α = 0.75 in training and evaluation; a caption's labels are the concept
      words it holds; retrieval scores the fused vectors by cosine.
    - ``released`` (BruceW91/CVSE): α = 0.85 in training and 0.85 (Flickr30K) or 0.9 (MS-COCO,
      `eval_dataset`) at evaluation; a caption's labels are the concepts with the WordNet lemma of one of its
      words; evaluation completes each caption's labels from its neighbours
      (`vse_ray.models.cvse_completion`), encodes it again and scores 0.95 · fused cosine + 0.05 ·
      consensus cosine. `encode_images` and `encode_captions` then give [fused, consensus] rows (B, 2E).
      The gradient clipping takes in the GCN too.

    Training (Sec. 3.5, the released weights): the run's loss on the fused similarities × `fused_weight`
    (3), plus `rank_loss` (VSE++'s max of hinges, only the pair's own column positive) on the instance
    level × `instance_weight` (5) and the consensus level × `consensus_weight` (1),
    plus `kl_weight` (2) × KL(p_caption ‖ p_image) summed over the batch, the caption's concept distribution
    as the target (gradients flow into both, as released).

    Args:
        vocab_size, feature_dim, word_dim, embed_dim: vocabulary, region feature size D, word size, E.
        n_concepts, concept_dim: K (300) and the size of the concept input vectors (300).
        adjacency: (K, K) re-weighted concept co-occurrence graph (None: the identity, a placeholder for
            weights loaded afterwards from a state dict, as are the next two).
        concept_inputs: (K, concept_dim) concept input vectors (None: random).
        token_concepts: (vocab_size,) concept index of each token id, -1: none (None: all -1).
        rank_loss: the VSE++ loss of a (B, B) similarity matrix that ranks the instance and consensus levels
            in training (None: a model for evaluation only).
        n_regions: regions per image (the visual self-attention's batch norm has one channel per region).
        dropout: of the word embeddings and the self-attention branches (0.4).
        label_ratio: weight r of a caption's concept labels in its concept distribution (0.35).
        fuse_alpha: α of the fusion in training (None: the reading's, 0.75 or 0.85); the sam_copy reading
            evaluates with it too.
        reading: "sam_copy" or "released" (above).
        eval_dataset: "f30k" or "coco": the released reading's evaluation α and label-completion rule.
        fused_weight, instance_weight, consensus_weight, kl_weight: the training loss above.

    The training factory (`vse_ray.train.model_factory`) reads the concepts, their vectors and the token
    index from the training folder or the released files and builds `rank_loss`.
    """

    kind: ClassVar[str] = "embedding"
    feature_layout = "regions"
    own_loss_terms: ClassVar[bool] = True
    data_inputs: ClassVar[tuple[str, ...]] = ("adjacency", "concept_inputs", "token_concepts", "rank_loss")
    adjacency: Tensor  # (K, K) normalised concept graph
    concept_inputs: Tensor  # (K, concept_dim) concept input vectors
    token_concepts: Tensor  # (vocab_size,) concept index of each token id, -1: none

    def __init__(
        self,
        *,
        vocab_size: int,
        feature_dim: int,
        word_dim: int = 300,
        embed_dim: int = 1024,
        n_concepts: int = DEFAULT_CONCEPTS,
        concept_dim: int = 300,
        n_regions: int = 36,
        dropout: float = 0.4,
        label_ratio: float = 0.35,
        fuse_alpha: float | None = None,
        fused_weight: float = 3.0,
        instance_weight: float = 5.0,
        consensus_weight: float = 1.0,
        kl_weight: float = 2.0,
        reading: str = "sam_copy",
        eval_dataset: str = "f30k",
        adjacency: Tensor | None = None,
        concept_inputs: Tensor | None = None,
        token_concepts: Tensor | None = None,
        rank_loss: Callable[[Tensor], Tensor] | None = None,
    ) -> None:
        _check_reading(reading, eval_dataset)
        # Built in the released order (image, text, the two attentions, the two consensus levels, the GCN),
        # so that a seed draws the released start; the text side's embedding is its `random_init` start.
        super().__init__(
            vocab_size, feature_dim, word_dim, embed_dim, True, dropout, n_regions, xavier_words=True
        )
        self.reading, self.eval_dataset = reading, eval_dataset
        # SAM's copy leaves the GCN out of gradient clipping; BruceW91/CVSE clips every module.
        self.unclipped = ("gcn.",) if reading == "sam_copy" else ()
        self.image_attention = ReleasedVisualSelfAttention(embed_dim, n_regions, dropout, xavier=False)
        self.text_attention = GuidedTextSelfAttention(embed_dim, dropout, xavier=False)
        image_consensus, text_consensus = ConsensusLevel(embed_dim), ConsensusLevel(embed_dim)
        self.gcn = ConceptGCN(concept_dim, embed_dim)
        self.image_consensus, self.text_consensus = image_consensus, text_consensus
        self.label_ratio = label_ratio
        self.fuse_alpha = TRAIN_ALPHA[reading] if fuse_alpha is None else fuse_alpha
        self.eval_alpha = RELEASED_EVAL_ALPHA[eval_dataset] if reading == "released" else self.fuse_alpha
        self.term_weights = {
            "instance_rank": instance_weight,
            "consensus_rank": consensus_weight,
            "concept_kl": kl_weight,
        }
        self.fused_weight = fused_weight
        self.rank_loss = rank_loss
        if adjacency is None:
            adjacency = torch.eye(n_concepts, dtype=torch.float64)
        if concept_inputs is None:
            concept_inputs = torch.randn(n_concepts, concept_dim)
        if token_concepts is None:
            token_concepts = torch.full((vocab_size,), -1, dtype=torch.int64)
        self.register_buffer("adjacency", normalized_adjacency(adjacency))
        self.register_buffer("concept_inputs", concept_inputs)
        self.register_buffer("token_concepts", token_concepts)

    @staticmethod
    def check_pretrained(reading: str = "sam_copy", eval_dataset: str = "f30k", **_: object) -> None:
        """Before training starts: the reading and its evaluation dataset are known."""
        _check_reading(reading, eval_dataset)

    def concepts(self) -> Tensor:
        """(K, E) unit concept representations from the GCN."""
        return self.gcn(self.concept_inputs, self.adjacency)

    def caption_labels(self, tokens: Tensor, lengths: Tensor) -> Tensor:
        """(B, K) 0/1: the concepts whose words the caption holds."""
        concept = self.token_concepts[tokens]
        present = (concept >= 0) & length_mask(lengths.to(tokens.device), tokens.shape[1])
        labels = torch.zeros(len(tokens), len(self.concept_inputs), device=tokens.device)
        return labels.scatter_reduce(1, concept.clamp(min=0), present.float(), reduce="amax")

    def image_levels(self, images: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """(B, R, D) regions → instance, consensus vectors (B, E) and concept distribution (B, K)."""
        check_region_features(images, type(self).__name__, self.n_regions)
        instance = self.image_attention(self.image_encoder(images))
        consensus, scores = self.image_consensus(instance, self.concepts())
        return instance, consensus, scores

    def caption_levels(
        self, tokens: Tensor, lengths: Tensor, labels: Tensor | None = None
    ) -> tuple[Tensor, Tensor, Tensor]:
        """(B, L) tokens, (B,) lengths → instance, consensus vectors (B, E), concept distribution (B, K);
        the caption's concept `labels` (B, K) default to `caption_labels`."""
        words = self.text_encoder(tokens, lengths)
        instance = self.text_attention(words, length_mask(lengths.to(words.device), words.shape[1]))
        if labels is None:
            labels = self.caption_labels(tokens[:, : words.shape[1]], lengths)
        consensus, scores = self.text_consensus(instance, self.concepts(), labels, self.label_ratio)
        return instance, consensus, scores

    def fuse(self, instance: Tensor, consensus: Tensor, alpha: float | None = None) -> Tensor:
        """(B, E) fused vectors: l2norm(α · instance + (1 - α) · consensus), α the training one by default."""
        alpha = self.fuse_alpha if alpha is None else alpha
        return l2_normalize(alpha * instance + (1 - alpha) * consensus)

    def _retrieval_vectors(self, instance: Tensor, consensus: Tensor) -> Tensor:
        """What evaluation scores: the fused vectors (B, E), or [fused, consensus] (B, 2E) as released."""
        fused = self.fuse(instance, consensus, self.eval_alpha)
        return torch.cat([fused, consensus], 1) if self.reading == "released" else fused

    def encode_images(self, images: Tensor) -> Tensor:
        """(B, R, D) region features → (B, E) fused embeddings ((B, 2E) with consensus, as released)."""
        return self._retrieval_vectors(*self.image_levels(images)[:2])

    def encode_captions(self, tokens: Tensor, lengths: Tensor, labels: Tensor | None = None) -> Tensor:
        """(B, L) token ids, (B,) lengths → (B, E) fused embeddings ((B, 2E) with consensus, as released);
        `labels` (B, K) replace the caption's own concept labels."""
        return self._retrieval_vectors(*self.caption_levels(tokens, lengths, labels)[:2])

    def score(self, img_repr: Tensor, txt_repr: Tensor, txt_lengths: Tensor | None = None) -> Tensor:
        """Cosine of the fused vectors; as released, 0.95 · that + 0.05 · cosine of the consensus vectors."""
        if self.reading != "released":
            return img_repr @ txt_repr.T
        e = img_repr.shape[1] // 2
        fused, consensus = img_repr[:, :e] @ txt_repr[:, :e].T, img_repr[:, e:] @ txt_repr[:, e:].T
        return RELEASED_FUSED_SCORE * fused + (1 - RELEASED_FUSED_SCORE) * consensus

    def encode_caption_split(self, img: Tensor, batches: Sequence[tuple[Tensor, Tensor]]) -> Tensor | None:
        """As released: every caption encoded with its own labels, the labels completed from its neighbours
        (`vse_ray.models.cvse_completion`), every caption encoded again with them. None: sam_copy."""
        if self.reading != "released":
            return None
        first = torch.cat([self.encode_captions(tokens, lengths) for tokens, lengths in batches])
        own = torch.cat([self.caption_labels(tokens, lengths) for tokens, lengths in batches])
        e = first.shape[1] // 2
        labels = complete_labels(own, completion_neighbours(img[:, :e], first[:, :e], self.eval_dataset))
        starts = np.cumsum([0] + [len(tokens) for tokens, _ in batches])
        return torch.cat(
            [
                self.encode_captions(tokens, lengths, labels[start : start + len(tokens)])
                for (tokens, lengths), start in zip(batches, starts[:-1].tolist(), strict=True)
            ]
        )

    def forward(
        self,
        images: Tensor,
        tokens: Tensor,
        lengths: Tensor,
        gather: Callable[[Tensor], Tensor] | None = None,
        region_keep: Tensor | None = None,  # never given: the model keeps every region (region_drop 0)
    ) -> TrainingOutput:
        """The fused (B, B) similarities for the run's loss and CVSE's own weighted terms (see the class)."""
        img_instance, img_consensus, img_scores = self.image_levels(images)
        txt_instance, txt_consensus, txt_scores = self.caption_levels(tokens, lengths)
        img_fused, txt_fused = self.fuse(img_instance, img_consensus), self.fuse(txt_instance, txt_consensus)
        pairs = {"fused": (img_fused, txt_fused), "instance": (img_instance, txt_instance)}
        pairs["consensus"] = (img_consensus, txt_consensus)
        if gather is not None:
            pairs = {name: (gather(a), gather(b)) for name, (a, b) in pairs.items()}
        sims = {name: a @ b.T for name, (a, b) in pairs.items()}
        kl = (torch.xlogy(txt_scores, txt_scores) - txt_scores * img_scores.log()).sum()
        if self.rank_loss is None:
            raise ValueError("CVSEModel: training needs a rank_loss (vse_ray.train.model_factory's)")
        terms = {
            "instance_rank": self.rank_loss(sims["instance"]),
            "consensus_rank": self.rank_loss(sims["consensus"]),
            "concept_kl": kl,
        }
        extra = {name: self.term_weights[name] * value for name, value in terms.items()}
        return TrainingOutput(sims["fused"], extra, self.fused_weight)


def _check_reading(reading: str, eval_dataset: str) -> None:
    if reading not in READINGS:
        raise ValueError(f"reading: {reading!r}, expected one of {list(READINGS)}")
    if eval_dataset not in RELEASED_EVAL_ALPHA:
        raise ValueError(f"eval_dataset: {eval_dataset!r}, expected one of {list(RELEASED_EVAL_ALPHA)}")
