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
Evaluation encodes each side once and calls ``score`` on query × gallery chunks. A model that trains with
terms of its own beside the matching loss (CVSE's levels, VSRN's caption generation) returns a
``TrainingOutput`` from its training ``forward`` (``vse_ray.models.training_output``).

``caption_ids(tokens, texts)`` is the one place that decides which ids ``encode_captions`` reads: the stored
vocabulary ids by default, or ids the model derives from the caption texts (VSE∞'s BERT wordpieces).
Training batches and evaluation both go through it; training passes caption augmentation to it.
``caption_space`` describes ids a model derives itself (vocabulary size, mask token, which tokens continue a
word), over which the augmentation then draws.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
from torch import Tensor, nn

from vse_ray.models.training_output import TrainingOutput

MODEL_KINDS = ("embedding", "similarity")
FEATURE_LAYOUTS = ("pooled", "regions", "pixels")


@dataclass(frozen=True)
class CaptionSpace:
    """Caption ids a model derives itself (not the stored vocabulary's): `vocab_size` ids, the mask token's
    id (None: no mask token), `continues` (bool per id: the token continues the previous token's word;
    None: every token is a word), and `wrapped`: the model adds tokens around every caption (BERT's
    [CLS] ... [SEP]), so caption augmentation may delete all of a caption's own ids."""

    vocab_size: int
    mask_id: int | None
    continues: np.ndarray | None = None
    wrapped: bool = False


# Caption augmentation bound to its random generator: token-id lists → augmented token-id lists.
AugmentIds = Callable[[list[np.ndarray]], list[np.ndarray]]


class RetrievalModel(nn.Module):
    """Base class of image–caption retrieval models (see the module docstring for the contract).

    Constructors take keyword arguments only; every model accepts ``vocab_size``, ``feature_dim``,
    ``word_dim`` and ``embed_dim`` and may add its own (given in training by ``TrainConfig.model_params``).
    """

    kind: ClassVar[str]
    feature_layout: str  # the class's; a model with several `input_layouts` sets it per instance
    # Every image layout the model can be built for (VSE++: pooled, or pixels with a CNN).
    input_layouts: ClassVar[tuple[str, ...]] = ()
    # TrainConfig fields passed to the constructor as keywords of the same name (besides model_params).
    config_fields: ClassVar[tuple[str, ...]] = ()
    # Constructor keywords the training factory (`vse_ray.train.model_factory`) fills from the data: tensors
    # (and callables) read from the training folder, not options; a checkpoint holds their tensors as buffers.
    data_inputs: ClassVar[tuple[str, ...]] = ()
    # Constructor keywords given the id of a token of the data's vocabulary ({keyword: token}): a released
    # vocabulary numbers the special tokens otherwise than vse_ray's own.
    vocab_ids: ClassVar[dict[str, str]] = {}
    # Parameter-name prefixes left out of gradient-norm clipping (as a reference code clips them); a model
    # may set it per instance (CVSE's readings differ).
    unclipped: tuple[str, ...] = ()
    # Whether the training forward may return a `TrainingOutput` with terms of the model's own: the epoch's
    # loss is then more than the run's loss, whose collapse value says nothing about it.
    own_loss_terms: ClassVar[bool] = False
    # Whether some parameters may get no gradient from a step (a CLIP checkpoint's logit scale, which a loss
    # on the similarities does not read): DDP then looks for them each step (`find_unused_parameters`).
    find_unused_parameters: ClassVar[bool] = False
    # Share of each training image's regions the data path drops (VSE∞'s size augmentation; 0: none). The
    # training step then passes the kept regions to `forward` (`region_keep`), which pools only those.
    region_drop: float = 0.0
    # State-dict key of a word embedding that holds a `<mask>` row after the vocabulary's words whether or not
    # captions are augmented, as the reference code adds it (VSE∞'s BiGRU; None: the row only when training
    # masks words). Training gives such a model one id more (`vse_ray.train.training_data`).
    mask_row: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if getattr(cls, "kind", None) not in MODEL_KINDS:
            raise TypeError(f"{cls.__name__}.kind must be one of {MODEL_KINDS}")
        if getattr(cls, "feature_layout", None) not in FEATURE_LAYOUTS:
            raise TypeError(f"{cls.__name__}.feature_layout must be one of {FEATURE_LAYOUTS}")
        if not cls.input_layouts:
            cls.input_layouts = (cls.feature_layout,)

    @classmethod
    def layouts_for(cls, model_params: dict[str, Any]) -> tuple[str, ...]:
        """The image layouts a model built with `model_params` reads (default: every `input_layouts`)."""
        return cls.input_layouts

    @classmethod
    def layout_hint(cls, layout: str) -> str:
        """How to build the model so that it reads `layout`, when other `model_params` would ("" if none)."""
        return ""

    @staticmethod
    def check_pretrained(**model_params: Any) -> None:
        """Raise FileNotFoundError (one line saying how to provide them) when pretrained weights these
        `model_params` (with the model's `config_fields`) need are not on this machine, or ValueError when
        files they name do not fit; checked before training starts. Default: none needed."""

    def encode_images(self, images: Tensor) -> Tensor:
        """Image input in ``feature_layout`` → (B, E) embeddings or (B, R, E) region features."""
        raise NotImplementedError

    def encode_captions(self, tokens: Tensor, lengths: Tensor) -> Tensor:
        """(B, L) token ids (0 = padding) and (B,) lengths → (B, E) embeddings or (B, L, E) word features."""
        raise NotImplementedError

    def pair_floats(self, n_regions: int, n_words: int) -> int:
        """Floats that scoring one image–caption pair holds at its peak: similarity models size their
        blocks by it; embedding models score by a matrix product and have none."""
        raise NotImplementedError(f"{type(self).__name__} scores by a matrix product")

    def encode_kept_regions(self, images: Tensor, keep: Tensor) -> Tensor:
        """`encode_images` of (B, R, D) regions pooling only those `keep` (B, R) marks (a model whose
        `region_drop` is above 0)."""
        raise NotImplementedError(f"{type(self).__name__} does not drop regions")

    def caption_ids(
        self,
        tokens: Sequence[np.ndarray],
        texts: Sequence[str],
        augment: AugmentIds | None = None,
    ) -> list[np.ndarray]:
        """The ids `encode_captions` reads for captions stored as vocabulary `tokens` with their `texts`;
        `augment` (training only) changes them where the model's captions allow it. Default: the stored
        tokens, augmented whole."""
        ids = [np.asarray(t, dtype=np.int64) for t in tokens]
        return augment(ids) if augment is not None else ids

    @property
    def caption_space(self) -> CaptionSpace | None:
        """The ids `caption_ids` gives when the model derives its own (what caption augmentation draws
        from); None: the stored vocabulary ids, augmented over the data's vocabulary."""
        return None

    def encode_caption_split(self, img: Tensor, batches: Sequence[tuple[Tensor, Tensor]]) -> Tensor | None:
        """The caption representations of a whole evaluation split when their encoding reads the split itself
        (CVSE's released label completion): `img` the split's encoded images, `batches` its (tokens, lengths)
        in split order. None (the default): each batch goes through `encode_captions` on its own."""
        return None

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
        region_keep: Tensor | None = None,
    ) -> Tensor | TrainingOutput:
        """(B, B) similarities of a training batch: ``score(encode_images(...), encode_captions(...))``.

        A model that trains with loss terms of its own returns them with the similarities in a
        `TrainingOutput` (`vse_ray.models.training_output`), which the training step adds to the run's loss.

        ``gather`` (DDP, embedding models only) maps this worker's (B, E) embeddings to the (W·B, E) global
        batch (``vse_ray.train.gather``), so the result is the (W·B, W·B) matrix of every worker's pairs.
        ``region_keep`` (B, R): the regions each image keeps (region drop, drawn by the data path).
        """
        if region_keep is None:
            img = self.encode_images(images)
        else:
            img = self.encode_kept_regions(images, region_keep)
        return self.batch_scores(img, self.encode_captions(tokens, lengths), lengths, gather)

    def batch_scores(
        self,
        img: Tensor,
        txt: Tensor,
        lengths: Tensor,
        gather: Callable[[Tensor], Tensor] | None = None,
    ) -> Tensor:
        """`forward`'s similarities from the batch's encoded images and captions (gathered first when
        `gather` is given)."""
        if gather is not None:
            if self.kind != "embedding":
                raise ValueError(f"{type(self).__name__}: only embedding models gather across workers")
            img, txt = gather(img), gather(txt)
        return self.score(img, txt, lengths)


def with_mask_row(theirs: dict[str, Any], ours: dict[str, Any], key: str | None) -> dict[str, Any]:
    """Checkpoint weights `theirs` for a model whose state is `ours`: where the embedding `key` (a model's
    `mask_row`) has one row less there (a run made before that model always held `<mask>`), its rows
    followed by `ours`'s last, the `<mask>` row as drawn. Any other checkpoint is returned as it is."""
    if key is None or key not in theirs or key not in ours:
        return theirs
    old, new = theirs[key], ours[key]
    if old.dim() != 2 or old.shape[1] != new.shape[1] or old.shape[0] != new.shape[0] - 1:
        return theirs
    return {**theirs, key: torch.cat([old, new[-1:].to(old)])}
