"""Per-caption vectors as a stateful ``map_batches`` callable: token ids, Sentence-BERT, TF-IDF+SVD,
CIDEr-D tf-idf vectors."""

from __future__ import annotations

import numpy as np
import torch

from vse_ray.data.precompute.official_vocab import ReleasedTokenizer
from vse_ray.data.precompute.vocab import encode
from vse_ray.relevance import CiderDocFreq, CiderVectors, SentenceEncoder, TfidfSvd, tokenize


class CaptionVectorizer:
    """Adds ``tokens`` (token ids), ``sbert`` (n, d), ``svd`` (n, k) and the CIDEr-D vector columns
    (``relevance.sources.CIDER_COLUMNS``) computed from ``text``.

    Args:
        vocab: ``{word: id}`` built from the training captions.
        svd_arrays: The TF-IDF + SVD model fitted on the training captions (``TfidfSvd.to_arrays()``).
        doc_freq: CIDEr document frequencies of the training images (``CiderDocFreq.to_dict()``).
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
        doc_freq: dict,
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
        self.doc_freq = CiderDocFreq.from_dict(doc_freq)
        self.sbert = SentenceEncoder(sbert_model, device=device, batch_size=batch_size)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        texts = [str(text) for text in batch["text"]]
        tokens = np.empty(len(texts), dtype=object)
        tokens[:] = [encode(self.tokenize(text), self.vocab) for text in texts]
        batch["tokens"] = tokens
        batch["sbert"] = self.sbert.encode(texts)
        batch["svd"] = self.svd.transform(texts)
        cider = CiderVectors.from_texts([tokenize(text) for text in texts], self.doc_freq)
        batch["cider_ngrams"] = _row_arrays(cider.indptr, cider.ngrams)
        batch["cider_tfidf"] = _row_arrays(cider.indptr, cider.tfidf)
        batch["cider_norms"], batch["cider_length"] = cider.norms, cider.length
        return batch


def _row_arrays(indptr: np.ndarray, values: np.ndarray) -> np.ndarray:
    """CSR values → object array holding each row's values."""
    rows = np.empty(len(indptr) - 1, dtype=object)
    rows[:] = np.split(values, indptr[1:-1])
    return rows
