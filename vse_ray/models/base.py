"""The contract every retrieval model follows, so that training, losses and evaluation treat all models alike.

Two kinds of model score an image i against a caption c:

- ``"embedding"`` models (VSE++, VSE∞) embed each side once, s(i, c) = f(i) · g(c). ``encode_images`` gives
  (B, E) and ``encode_captions`` (B, E) L2-normalised rows; ``score`` is ``img @ txt.T``.
- ``"similarity"`` models (SCAN, SGRAF) score each pair with a learned function of regions and words.
  ``encode_images`` gives region features (B, R, E), ``encode_captions`` word features (B, L, E), and
  ``score`` computes the (N_img, N_txt) matrix from them (it needs the caption lengths to mask padding).

``feature_layout`` names the image input the model reads: ``"pooled"`` features (B, D), ``"regions"``
(B, R, D) or ``"pixels"`` (uint8 (B, H, W, 3), a CNN fine-tuned end to end). A model whose input depends on
its arguments (VSE++ reads pooled features, or pixels when it fine-tunes a CNN) sets it per instance and
lists every layout it can be built for in ``input_layouts``.

``forward(images, tokens, lengths)`` is the training step's call: the (B, B) similarity matrix of a batch,
row b's positive in column b, which every loss takes through ``loss.from_similarity(sims, relevance, ids)``.
Evaluation encodes each side once and calls ``score`` on query × gallery chunks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from torch import Tensor, nn

MODEL_KINDS = ("embedding", "similarity")
FEATURE_LAYOUTS = ("pooled", "regions", "pixels")


class RetrievalModel(nn.Module):
    """Base class of image–caption retrieval models (see the module docstring for the contract).

    Constructors take keyword arguments only; every model accepts ``vocab_size``, ``feature_dim``,
    ``word_dim`` and ``embed_dim`` and may add its own (given in training by ``TrainConfig.model_params``).
    """

    kind: ClassVar[str]
    feature_layout: ClassVar[str]
    # Every image layout the model can be built for (VSE++: pooled, or pixels with a CNN).
    input_layouts: ClassVar[tuple[str, ...]] = ()
    # TrainConfig fields passed to the constructor as keywords of the same name (besides model_params).
    config_fields: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if getattr(cls, "kind", None) not in MODEL_KINDS:
            raise TypeError(f"{cls.__name__}.kind must be one of {MODEL_KINDS}")
        if getattr(cls, "feature_layout", None) not in FEATURE_LAYOUTS:
            raise TypeError(f"{cls.__name__}.feature_layout must be one of {FEATURE_LAYOUTS}")
        if not cls.input_layouts:
            cls.input_layouts = (cls.feature_layout,)

    def encode_images(self, images: Tensor) -> Tensor:
        """Image input in ``feature_layout`` → (B, E) embeddings or (B, R, E) region features."""
        raise NotImplementedError

    def encode_captions(self, tokens: Tensor, lengths: Tensor) -> Tensor:
        """(B, L) token ids (0 = padding) and (B,) lengths → (B, E) embeddings or (B, L, E) word features."""
        raise NotImplementedError

    def score(self, img_repr: Tensor, txt_repr: Tensor, txt_lengths: Tensor | None = None) -> Tensor:
        """(N_img, N_txt) similarity of every encoded image with every encoded caption.

        The default is the embedding models' dot product; similarity models override it.
        """
        return img_repr @ txt_repr.T

    def forward(
        self,
        images: Tensor,
        tokens: Tensor,
        lengths: Tensor,
        gather: Callable[[Tensor], Tensor] | None = None,
    ) -> Tensor:
        """(B, B) similarities of a training batch: ``score(encode_images(...), encode_captions(...))``.

        ``gather`` (DDP, embedding models only) maps this worker's (B, E) embeddings to the (W·B, E) global
        batch (``vse_ray.train.gather``), so the result is the (W·B, W·B) matrix of every worker's pairs.
        """
        img, txt = self.encode_images(images), self.encode_captions(tokens, lengths)
        if gather is not None:
            if self.kind != "embedding":
                raise ValueError(f"{type(self).__name__}: only embedding models gather across workers")
            img, txt = gather(img), gather(txt)
        return self.score(img, txt, lengths)
