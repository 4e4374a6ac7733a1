"""Caption augmentation of VSE∞'s training captions (Chen et al., CVPR 2021, official code; both text
encoders): each word of a training caption is, independently,

- masked with probability p_mask: every token of the word becomes the mask token;
- replaced with probability p_replace: every token of the word becomes an id drawn uniformly from the
  whole vocabulary [0, V), each token its own draw;
- deleted with probability p_delete: the word's tokens are removed;
- kept otherwise (probability 1 - p_mask - p_replace - p_delete).

One uniform draw u per word decides: mask if u < p_mask, replace if u < p_mask + p_replace, delete if
u < p_mask + p_replace + p_delete. The official code selects a word with probability 0.2 and then masks /
replaces / deletes it with 0.5 / 0.1 / 0.4, i.e. p_mask = 0.1, p_replace = 0.02, p_delete = 0.08. A word is
one vocabulary token (BiGRU), or one whitespace/punctuation word and all its wordpieces (BERT: a wordpiece
marked as continuing the previous one, ``##...``, belongs to the previous token's word). New draws every call,
so every epoch sees other captions; evaluation does not augment.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def check_probabilities(mask: float, replace: float, delete: float) -> None:
    """ValueError naming the first probability outside [0, 1], or their sum above 1."""
    for name, value in (("caption_mask", mask), ("caption_replace", replace), ("caption_delete", delete)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name}: must be a probability in [0, 1], got {value!r}")
    total = mask + replace + delete
    if total > 1.0:
        raise ValueError(f"caption_mask + caption_replace + caption_delete: must be at most 1, got {total}")


def augment_captions(
    captions: Sequence[Sequence[int] | np.ndarray],
    *,
    mask_id: int | None,
    vocab_size: int,
    mask: float,
    replace: float,
    delete: float,
    rng: np.random.Generator,
    continues: np.ndarray | None = None,
) -> list[np.ndarray]:
    """Mask, replace or delete words of token-id captions (see the module docstring for the law).

    Args:
        captions: Token ids of each caption (no padding).
        mask_id: Id of the mask token (may be None only when ``mask`` is 0).
        vocab_size: V: replacements are drawn uniformly from ids 0..V-1.
        mask, replace, delete: Per-word probabilities.
        rng: The generator of every draw (one uniform per word, one integer per replaced token).
        continues: Boolean per vocabulary id: True where the token continues the previous token's word
            (BERT's ``##`` wordpieces); None: every token is a word.

    Returns:
        The augmented captions as int64 arrays (shorter where words were deleted).
    """
    check_probabilities(mask, replace, delete)
    if mask > 0 and mask_id is None:
        raise ValueError("caption_mask: the captions' vocabulary has no mask token")
    arrays = [np.asarray(c, dtype=np.int64) for c in captions]
    if not arrays:
        return []
    flat = np.concatenate(arrays)
    bounds = np.cumsum([len(a) for a in arrays])[:-1]
    starts = np.ones(len(flat), dtype=bool) if continues is None else ~np.asarray(continues)[flat]
    starts[np.concatenate([[0], bounds])[[len(a) > 0 for a in arrays]]] = True  # a caption starts a word
    u = rng.random(int(starts.sum()))[np.cumsum(starts) - 1]
    masked = u < mask
    replaced = ~masked & (u < mask + replace)
    deleted = ~masked & ~replaced & (u < mask + replace + delete)
    out = flat.copy()
    if masked.any():
        out[masked] = mask_id
    out[replaced] = rng.integers(0, vocab_size, int(replaced.sum()))
    return [part[~gone] for part, gone in zip(np.split(out, bounds), np.split(deleted, bounds), strict=True)]
