"""The shell of the cross-attention models: region features and word features in, a learned pair score."""

from __future__ import annotations

from typing import ClassVar

from torch import Tensor

from vse_ray.models.base import RetrievalModel
from vse_ray.models.image_encoder import ImageProjection
from vse_ray.models.region_input import check_region_features
from vse_ray.models.word_encoder import WordGRUEncoder


class RegionWordModel(RetrievalModel):
    """Regions W_v f_r, L2-normalised (B, R, E), and Bi-GRU words (B, L, E); subclasses define ``score``.

    Args:
        vocab_size, feature_dim, word_dim, embed_dim: vocabulary, region feature size D, word size, E.
        bidirectional, dropout, xavier_words: of the word encoder (see WordGRUEncoder).
        n_regions: regions per image when the model depends on it (checked on input), else None.
    """

    kind: ClassVar[str] = "similarity"
    feature_layout = "regions"

    def __init__(
        self,
        vocab_size: int,
        feature_dim: int,
        word_dim: int,
        embed_dim: int,
        bidirectional: bool,
        dropout: float = 0.0,
        n_regions: int | None = None,
        xavier_words: bool = False,
    ) -> None:
        super().__init__()
        self.image_encoder = ImageProjection(feature_dim, embed_dim)
        self.text_encoder = WordGRUEncoder(
            vocab_size, word_dim, embed_dim, bidirectional, dropout, xavier_words
        )
        self.n_regions = n_regions

    def encode_images(self, images: Tensor) -> Tensor:
        """(B, R, D) region features → (B, R, E) unit region vectors."""
        check_region_features(images, type(self).__name__, self.n_regions)
        return self.image_encoder(images)

    def encode_captions(self, tokens: Tensor, lengths: Tensor) -> Tensor:
        """(B, L) token ids, (B,) lengths → (B, max(lengths), E) unit word vectors."""
        return self.text_encoder(tokens, lengths)
