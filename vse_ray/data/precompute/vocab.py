"""Word vocabulary of the captions, built from the training split only (VSE++ ``vocab.py`` convention)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import numpy as np

from vse_ray.special_tokens import SPECIAL_TOKENS


def build_vocab(tokenised: Iterable[str], min_count: int = 4) -> dict[str, int]:
    """``{word: id}``: special tokens at 0..3, then every word seen ``min_count`` times, most frequent first.

    Args:
        tokenised: Training captions, already tokenised (words separated by spaces).
        min_count: Minimum count of a kept word (VSE++ uses 4).
    """
    counts = Counter(word for text in tokenised for word in text.split())
    words = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
    return {word: index for index, word in enumerate((*SPECIAL_TOKENS, *words))}


def encode(tokenised: str, vocab: dict[str, int]) -> np.ndarray:
    """Token ids ``<start> w1 ... wn <end>`` of a tokenised caption (unknown words → ``<unk>``), the special
    ids read from `vocab` (a released vocabulary numbers them otherwise)."""
    unk = vocab["<unk>"]
    words = (vocab.get(word, unk) for word in tokenised.split())
    return np.array([vocab["<start>"], *words, vocab["<end>"]], dtype=np.int32)
