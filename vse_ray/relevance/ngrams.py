"""Sparse n-gram term-frequency matrices over whitespace-tokenised captions."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp


@dataclass(frozen=True)
class NgramCounts:
    """Term frequencies of all 1..max_n-grams of a list of texts.

    Attributes:
        counts: (n_texts, n_ngrams) CSR matrix of int32 term frequencies.
        ngrams: Column index → n-gram, its words joined by single spaces.
        order: (n_ngrams,) int64 n-gram length (1..max_n) of each column.
    """

    counts: sp.csr_matrix
    ngrams: list[str]
    order: np.ndarray


def _text_ngrams(text: str, max_n: int) -> Counter[str]:
    """Counts of every 1..max_n-gram of ``text`` split on whitespace (pycocoevalcap ``precook``)."""
    words = text.split()
    grams = Counter(words)
    for n in range(2, max_n + 1):
        grams.update(map(" ".join, zip(*(words[i:] for i in range(n)), strict=False)))
    return grams


def ngram_counts(texts: Sequence[str], max_n: int = 4) -> NgramCounts:
    """Build the n-gram term-frequency matrix of ``texts`` with one shared vocabulary.

    Identical texts are counted once and share their row pattern.

    Args:
        texts: Pre-tokenised texts (words separated by whitespace).
        max_n: Longest n-gram.

    Returns:
        The counts, the vocabulary and each column's n-gram order.
    """
    vocab: dict[str, int] = {}
    unique_row: dict[str, int] = {}
    row_of_text = np.empty(len(texts), dtype=np.int64)
    indptr, indices, data = [0], [], []
    for i, text in enumerate(texts):
        row = unique_row.get(text)
        if row is None:
            row = unique_row[text] = len(unique_row)
            for gram, count in _text_ngrams(text, max_n).items():
                indices.append(vocab.setdefault(gram, len(vocab)))
                data.append(count)
            indptr.append(len(indices))
        row_of_text[i] = row
    unique_counts = sp.csr_matrix(
        (np.asarray(data, dtype=np.int32), np.asarray(indices, dtype=np.int64), np.asarray(indptr)),
        shape=(len(unique_row), len(vocab)),
    )
    ngrams = list(vocab)
    order = np.fromiter((gram.count(" ") + 1 for gram in ngrams), dtype=np.int64, count=len(ngrams))
    return NgramCounts(counts=unique_counts[row_of_text], ngrams=ngrams, order=order)
