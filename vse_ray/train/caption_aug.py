"""Caption augmentation of the VSE∞ reference code: each token of a training caption, <start> and <end>
included, independently becomes a mask token (probability `mask`), a token drawn uniformly from the whole
vocabulary (`replace`) or is deleted (`delete`), drawn anew at every step; evaluation sees clean captions.
The reference BiGRU setting is 20 % of the tokens changed: mask 0.1, replace 0.02, delete 0.08.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class CaptionAugment:
    """Per-token augmentation of token-id sequences.

    Args:
        mask: Probability that a token becomes `mask_id`.
        replace: Probability that a token becomes a uniform draw from `range(vocab_size)`.
        delete: Probability that a token is removed (a caption keeps at least its first token).
        mask_id: Id of the mask token.
        vocab_size: Number of token ids a replacement draws from.
    """

    mask: float
    replace: float
    delete: float
    mask_id: int
    vocab_size: int

    @property
    def active(self) -> bool:
        return self.mask + self.replace + self.delete > 0

    def __call__(self, captions: list[np.ndarray], rng: np.random.Generator) -> list[np.ndarray]:
        """Augmented copies of `captions` (1-D integer arrays), vectorised over every token of the batch."""
        lengths = np.array([len(c) for c in captions])
        if not self.active or lengths.sum() == 0:
            return [np.asarray(c) for c in captions]
        tokens = np.concatenate([np.asarray(c, dtype=np.int64) for c in captions])
        u = rng.random(len(tokens))
        masked = u < self.mask
        replaced = (u >= self.mask) & (u < self.mask + self.replace)
        deleted = (u >= self.mask + self.replace) & (u < self.mask + self.replace + self.delete)
        out = np.where(masked, self.mask_id, tokens)
        out = np.where(replaced, rng.integers(0, self.vocab_size, len(tokens)), out)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        keep = ~deleted
        emptied = np.add.reduceat(keep, starts[lengths > 0]) == 0 if len(starts) else np.array([], bool)
        keep[starts[lengths > 0][emptied]] = True  # a caption never becomes empty
        pieces = np.split(out, np.cumsum(lengths)[:-1])
        kept = np.split(keep, np.cumsum(lengths)[:-1])
        return [p[k] for p, k in zip(pieces, kept, strict=True)]
