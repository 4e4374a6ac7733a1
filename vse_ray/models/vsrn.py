"""VSRN: Visual Semantic Reasoning (Li, Zhang, Li, Li, Fu, "Visual Semantic Reasoning for Image-Text
Matching", ICCV 2019), an embedding model whose image side reasons over region features.

- Regions (Sec. 3.1): V = W_f φ + b_f for the R region features φ (``variant="coco"`` then L2-normalises
  them as the reference code does on COCO: each feature channel over the regions, see below).
- Region relationship reasoning (Sec. 3.2, eq. 1-3): four residual graph convolutions, each
  V* = W_r (R V W_g) + V with the affinity R = (V W_φ)(V W_θ)ᵀ / R_count (the reference implementation's
  ``Rs_GCN``: 1×1 convolutions φ, θ, g, and W_r a linear layer followed by BatchNorm whose scale and shift
  start at 0, so every layer starts as the identity). The reasoned regions are L2-normalised as in the
  reference code, whose ``l2norm`` normalises dimension 1 of (B, R, E): each feature channel over the R
  regions, not each region.
- Global semantic reasoning (Sec. 3.2, eq. 4-5): a GRU over the reasoned regions in their stored order; its
  last hidden state is the image (``variant="f30k"`` passes it through BatchNorm first, as the reference
  code does on Flickr30K), L2-normalised.
- Captions: VSE++'s GRU encoder (its last hidden state, L2-normalised); s(i, c) = f(i) · g(c).
- Training (Sec. 3.3, eq. 7): the matching loss plus `caption_weight` × the caption-generation loss L_G of
  :mod:`vse_ray.models.caption_decoder` on the reasoned regions, returned by the training ``forward`` as a
  local term of a `TrainingOutput` (each worker's own pairs).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from torch import Tensor, nn

from vse_ray.models.base import RetrievalModel
from vse_ray.models.caption_decoder import CaptionDecoder
from vse_ray.models.initial_weights import xavier_linear
from vse_ray.models.normalize import l2_normalize
from vse_ray.models.region_input import check_region_features
from vse_ray.models.text_encoder import GRUTextEncoder
from vse_ray.models.training_output import TrainingOutput
from vse_ray.special_tokens import END

VSRN_VARIANTS = ("f30k", "coco")
REASONING_LAYERS = 4


class RegionGraphReasoning(nn.Module):
    """One residual graph convolution over (B, R, E) regions (VSRN eq. 1-3): V + BN(W_r (R V W_g))."""

    def __init__(self, dim: int):
        super().__init__()
        # Drawn in the released ``Rs_GCN``'s order (g, W's conv, theta, phi; its 1×1 convolutions draw what
        # these linear layers draw), registered in this one.
        g, out, theta, phi = (nn.Linear(dim, dim) for _ in range(4))
        self.g, self.theta, self.phi, self.out = g, theta, phi, out
        self.bn = nn.BatchNorm1d(dim)
        nn.init.zeros_(self.bn.weight)
        nn.init.zeros_(self.bn.bias)

    def forward(self, regions: Tensor) -> Tensor:
        affinity = self.theta(regions) @ self.phi(regions).transpose(1, 2) / regions.shape[1]
        update = self.out(affinity @ self.g(regions))
        return regions + self.bn(update.transpose(1, 2)).transpose(1, 2)


class ReasoningImageEncoder(nn.Module):
    """(B, R, D) regions → ((B, E) image embeddings, (B, R, E) reasoned regions) (module docstring)."""

    def __init__(self, feature_dim: int, embed_dim: int, variant: str):
        super().__init__()
        if variant not in VSRN_VARIANTS:
            raise ValueError(f"variant: must be one of {VSRN_VARIANTS}, got {variant!r}")
        self.normalize_regions = variant == "coco"
        self.fc = xavier_linear(feature_dim, embed_dim)
        rnn = nn.GRU(embed_dim, embed_dim, batch_first=True)  # drawn before the reasoning, as released
        self.reasoning = nn.Sequential(*(RegionGraphReasoning(embed_dim) for _ in range(REASONING_LAYERS)))
        self.rnn = rnn
        self.bn = nn.BatchNorm1d(embed_dim) if variant == "f30k" else nn.Identity()

    def forward(self, regions: Tensor) -> tuple[Tensor, Tensor]:
        check_region_features(regions, "vsrn")
        features = self.fc(regions)
        if self.normalize_regions:
            features = l2_normalize(features, dim=1)
        reasoned = l2_normalize(self.reasoning(features), dim=1)
        _, hidden = self.rnn(reasoned)
        return l2_normalize(self.bn(hidden[0])), reasoned


class VSRNModel(RetrievalModel):
    """VSRN (model name "vsrn"): graph-reasoned regions → GRU → image embedding; GRU caption encoder.

    Args:
        vocab_size, feature_dim, word_dim, embed_dim: vocabulary, region feature size D, word size, joint
            size E (2048 in the reference code).
        variant: "f30k" (BatchNorm on the image embedding) or "coco" (L2-normalised regions after the FC), the
            reference code's switch on its dataset name.
        caption_weight: Weight of the caption-generation loss beside the matching loss (1 in the reference
            code); 0 builds no caption decoder.
        caption_hidden: Hidden size of the caption decoder's GRUs (512).
        caption_word_dim: Word embedding size of the caption decoder (300).
        max_len: Longest caption the decoder learns, ``<start>`` and ``<end>`` included (60).
        caption_dropout: Dropout inside the caption decoder (0.2).
        end_id: Id of ``<end>`` in the data's vocabulary, which training passes (`vocab_ids`); a released
            vocabulary numbers it 2, vse_ray's own 3 (the default).
    """

    kind = "embedding"
    feature_layout = "regions"
    own_loss_terms = True
    vocab_ids: ClassVar[dict[str, str]] = {"end_id": "<end>"}

    def __init__(
        self,
        *,
        vocab_size: int,
        feature_dim: int,
        word_dim: int = 300,
        embed_dim: int = 2048,
        variant: str = "f30k",
        caption_weight: float = 1.0,
        caption_hidden: int = 512,
        caption_word_dim: int = 300,
        max_len: int = 60,
        caption_dropout: float = 0.2,
        end_id: int = END,
    ):
        super().__init__()
        if caption_weight < 0:
            raise ValueError(f"caption_weight must be >= 0, got {caption_weight}")
        self.image_encoder = ReasoningImageEncoder(feature_dim, embed_dim, variant)
        self.text_encoder = GRUTextEncoder(vocab_size, word_dim, embed_dim)
        self.caption_weight = caption_weight
        self.captioner = (
            CaptionDecoder(
                vocab_size, embed_dim, end_id, caption_hidden, caption_word_dim, max_len, caption_dropout
            )
            if caption_weight > 0
            else None
        )

    def encode_images(self, images: Tensor) -> Tensor:
        """(B, R, D) region features → (B, E) unit vectors."""
        return self.image_encoder(images)[0]

    def encode_captions(self, tokens: Tensor, lengths: Tensor) -> Tensor:
        """(B, L) token ids + (B,) lengths → (B, E) unit vectors."""
        return self.text_encoder(tokens, lengths)

    def forward(
        self,
        images: Tensor,
        tokens: Tensor,
        lengths: Tensor,
        gather: Callable[[Tensor], Tensor] | None = None,
        region_keep: Tensor | None = None,  # never given: the model keeps every region (region_drop 0)
    ) -> Tensor | TrainingOutput:
        """The batch's (B, B) similarities; in training mode with them the weighted caption-generation loss
        of each caption from its own image's reasoned regions (a term of this worker's pairs)."""
        img, reasoned = self.image_encoder(images)
        sims = self.batch_scores(img, self.encode_captions(tokens, lengths), lengths, gather)
        if not (self.training and self.captioner is not None):
            return sims
        caption = self.caption_weight * self.captioner.loss(reasoned, tokens, lengths)
        return TrainingOutput(sims, local_losses={"caption": caption})
