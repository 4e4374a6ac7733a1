"""Per-caption vectors as a stateful ``map_batches`` callable: token ids, Sentence-BERT, TF-IDF+SVD."""

from __future__ import annotations

import numpy as np
import torch

from vse_ray.data.precompute.official_vocab import ReleasedTokenizer
from vse_ray.data.precompute.vocab import encode
from vse_ray.relevance import SentenceEncoder, TfidfSvd, tokenize


class CaptionVectorizer:
    """Adds ``tokens`` (token ids), ``sbert`` (n, d) and ``svd`` (n, k) columns computed from ``text``.

    Args:
        vocab: ``{word: id}`` built from the training captions.
        svd_arrays: The TF-IDF + SVD model fitted on the training captions (``TfidfSvd.to_arrays()``).
        sbert_model: Sentence-BERT model name or folder.
        device: Torch device of the Sentence-BERT model.
        batch_size: Captions per Sentence-BERT forward pass.
        num_threads: torch intra-op threads on CPU (None leaves torch's default).
        released_tokens: Tokenise the token ids' captions as the released code does (`vocab` is then a
            released vocabulary); the relevance vectors keep vse_ray's tokenisation.
    """

    def __init__(
        self,
        vocab: dict[str, int],
        svd_arrays: dict[str, np.ndarray],
        sbert_model: str,
        device: str = "cpu",
        batch_size: int = 64,
        num_threads: int | None = None,
        released_tokens: bool = False,
    ):
        if num_threads is not None:
            torch.set_num_threads(num_threads)
        self.vocab = vocab
        self.tokenize = ReleasedTokenizer() if released_tokens else tokenize
        self.svd = TfidfSvd.from_arrays(svd_arrays)
        self.sbert = SentenceEncoder(sbert_model, device=device, batch_size=batch_size)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        texts = [str(text) for text in batch["text"]]
        tokens = np.empty(len(texts), dtype=object)
        tokens[:] = [encode(self.tokenize(text), self.vocab) for text in texts]
        batch["tokens"] = tokens
        batch["sbert"] = self.sbert.encode(texts)
        batch["svd"] = self.svd.transform(texts)
        return batch
