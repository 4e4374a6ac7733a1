"""Caption augmentation of the VSE∞ reference code: each word of a training caption independently becomes
the mask token (probability `mask`), tokens drawn uniformly from the whole vocabulary (`replace`) or is
deleted (`delete`), drawn anew at every step; evaluation sees clean captions.

A word is one vocabulary token for the BiGRU (<start> and <end> included), and for BERT one word of the
basic tokenizer with all its wordpieces: one uniform draw decides the fate of the whole word (all its pieces
masked, or deleted), while a replaced word draws each piece separately, as the reference's BERT branch. The
reference setting is 20 % of the words changed, split 50 / 10 / 40: mask 0.1, replace 0.02, delete 0.08.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from vse_ray.models.base import CaptionSpace


@dataclass(frozen=True)
class CaptionAugment:
    """Per-word augmentation of token-id sequences.

    Args:
        mask: Probability that a word becomes `mask_id` (each of its tokens).
        replace: Probability that each token of a word becomes a uniform draw from `range(vocab_size)`.
        delete: Probability that a word is removed.
        mask_id: Id of the mask token.
        vocab_size: Number of token ids a replacement draws from.
        continues: Boolean per token id: True where the token continues the previous token's word (BERT's
            ``##`` wordpieces); None: every token is a word.
        keep_one: A caption never becomes empty (its first token stays); False where the model adds tokens
            around it anyway (BERT's [CLS] ... [SEP]), as the reference.
    """

    mask: float
    replace: float
    delete: float
    mask_id: int
    vocab_size: int
    continues: np.ndarray | None = None
    keep_one: bool = True

    @property
    def active(self) -> bool:
        return self.mask + self.replace + self.delete > 0

    def in_space(self, space: CaptionSpace) -> CaptionAugment:
        """The same probabilities over a model's own caption ids (`RetrievalModel.caption_space`)."""
        if self.mask > 0 and space.mask_id is None:
            raise ValueError("caption_mask: the model's caption vocabulary has no mask token")
        return dataclasses.replace(
            self,
            mask_id=space.mask_id if space.mask_id is not None else self.mask_id,
            vocab_size=space.vocab_size,
            continues=space.continues,
            keep_one=not space.wrapped,
        )

    def __call__(self, captions: list[np.ndarray], rng: np.random.Generator) -> list[np.ndarray]:
        """Augmented copies of `captions` (1-D integer arrays), vectorised over every token of the batch."""
        lengths = np.array([len(c) for c in captions], dtype=np.int64)
        if not self.active or lengths.sum() == 0:
            return [np.asarray(c) for c in captions]
        tokens = np.concatenate([np.asarray(c, dtype=np.int64) for c in captions])
        bounds = np.cumsum(lengths)[:-1]
        starts = np.concatenate([[0], bounds])[lengths > 0]  # first token of each non-empty caption
        word_start = np.ones(len(tokens), dtype=bool) if self.continues is None else ~self.continues[tokens]
        word_start[starts] = True  # a caption starts a word
        u = rng.random(int(word_start.sum()))[np.cumsum(word_start) - 1]  # one draw per word
        masked = u < self.mask
        replaced = (u >= self.mask) & (u < self.mask + self.replace)
        deleted = (u >= self.mask + self.replace) & (u < self.mask + self.replace + self.delete)
        out = np.where(masked, self.mask_id, tokens)
        out = np.where(replaced, rng.integers(0, self.vocab_size, len(tokens)), out)
        keep = ~deleted
        if self.keep_one:
            emptied = np.add.reduceat(keep, starts) == 0
            keep[starts[emptied]] = True  # a caption never becomes empty
        pieces, kept = np.split(out, bounds), np.split(keep, bounds)
        return [p[k] for p, k in zip(pieces, kept, strict=True)]
