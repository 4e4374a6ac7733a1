"""Per-caption columns as a stateful ``map_batches`` callable: token ids, and every relevance source's
caption columns (`RelevanceSource.vectoriser`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from vse_ray.data.precompute.official_vocab import ReleasedTokenizer
from vse_ray.data.precompute.vocab import encode
from vse_ray.relevance import tokenize
from vse_ray.relevance.sources import SOURCES


class CaptionVectorizer:
    """Adds ``tokens`` (token ids) and the columns of every relevance source that stores some (``sbert``,
    ``svd``, the CIDEr-D vectors of ``relevance.sources.CIDER_COLUMNS``), computed from ``text``.

    Args:
        vocab: ``{word: id}`` built from the training captions.
        fitted: What each source fitted on the training captions (`RelevanceSource.fit`), by name.
        device: Torch device of the sources' models (Sentence-BERT).
        batch_size: Captions per forward pass of those models.
        num_threads: torch intra-op threads on CPU (None leaves torch's default).
        released_tokens: Tokenise the token ids' captions as the released code does (`vocab` is then a
            released vocabulary); the relevance columns keep vse_ray's tokenisation.
        strip_punctuation: With `released_tokens`, remove the punctuation first (the ladder code's
            vocabulary).
    """

    def __init__(
        self,
        vocab: dict[str, int],
        fitted: dict[str, Any],
        device: str = "cpu",
        batch_size: int = 64,
        num_threads: int | None = None,
        released_tokens: bool = False,
        strip_punctuation: bool = False,
    ):
        if num_threads is not None:
            torch.set_num_threads(num_threads)
        self.vocab = vocab
        self.tokenize = ReleasedTokenizer(strip_punctuation) if released_tokens else tokenize
        vectorisers = (s.vectoriser(fitted.get(name), device, batch_size) for name, s in SOURCES.items())
        self.vectorisers = [v for v in vectorisers if v is not None]

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        texts = [str(text) for text in batch["text"]]
        tokens = np.empty(len(texts), dtype=object)
        tokens[:] = [encode(self.tokenize(text), self.vocab) for text in texts]
        batch["tokens"] = tokens
        for vectorise in self.vectorisers:
            batch.update(vectorise(texts))
        return batch
