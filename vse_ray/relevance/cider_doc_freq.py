"""CIDEr document frequencies: in how many images' reference sets each n-gram occurs."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from vse_ray.relevance._checks import check_reference_sets
from vse_ray.relevance.ngrams import ngram_counts

CIDER_MAX_N = 4


@dataclass(frozen=True)
class CiderDocFreq:
    """Document frequencies of CIDEr n-grams over a set of images (documents = reference sets).

    The idf of an n-gram g is ``log_num_docs - log(max(1, doc_freq[g]))``, the tf-idf weighting of
    CIDEr (Vedantam et al. 2015) as pycocoevalcap's ``CiderScorer.compute_cider`` computes it; unseen
    n-grams get ``doc_freq = 0``.

    Attributes:
        doc_freq: N-gram (words joined by single spaces) → number of images whose references contain it.
        log_num_docs: Natural log of the number of images the frequencies were counted over.
    """

    doc_freq: dict[str, float]
    log_num_docs: float

    def __post_init__(self) -> None:
        if not math.isfinite(self.log_num_docs) or self.log_num_docs < 0:
            raise ValueError(f"log_num_docs must be finite and >= 0, got {self.log_num_docs}")
        limit = math.exp(self.log_num_docs) * (1 + 1e-9)
        for gram, freq in self.doc_freq.items():
            if not 0 <= freq <= limit:
                raise ValueError(
                    f"doc_freq[{gram!r}] = {freq} must lie in [0, exp(log_num_docs) = {limit:.6g}]"
                )

    def lookup(self, ngrams: Sequence[str]) -> np.ndarray:
        """Document frequency of each n-gram, 0 for n-grams never seen in the reference sets."""
        get = self.doc_freq.get
        return np.fromiter((get(gram, 0.0) for gram in ngrams), dtype=np.float64, count=len(ngrams))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: ``{"log_num_docs": float, "doc_freq": {ngram: count}}``."""
        return {"log_num_docs": self.log_num_docs, "doc_freq": dict(self.doc_freq)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CiderDocFreq:
        """Inverse of :meth:`to_dict`; raises ValueError naming a missing key."""
        for key in ("log_num_docs", "doc_freq"):
            if key not in data:
                raise ValueError(f"CiderDocFreq dict is missing the key {key!r}")
        return cls(doc_freq=dict(data["doc_freq"]), log_num_docs=float(data["log_num_docs"]))


def image_document_frequency(ref_counts: sp.csr_matrix, set_sizes: np.ndarray) -> np.ndarray:
    """Number of reference sets containing each column's n-gram.

    Args:
        ref_counts: (n_refs, n_ngrams) term frequencies of the flattened references, set after set.
        set_sizes: (n_sets,) number of references in each set.

    Returns:
        (n_ngrams,) float64 document frequencies.
    """
    set_of_ref = np.repeat(np.arange(len(set_sizes)), set_sizes)
    membership = sp.csr_matrix(
        (np.ones(len(set_of_ref)), (set_of_ref, np.arange(len(set_of_ref)))),
        shape=(len(set_sizes), len(set_of_ref)),
    )
    per_set = membership @ (ref_counts > 0).astype(np.float64)
    return per_set.tocsc().getnnz(axis=0).astype(np.float64)


def cider_doc_freq(references: Sequence[Sequence[str]]) -> CiderDocFreq:
    """Count, for every 1..4-gram, how many reference sets (images) contain it.

    Equals pycocoevalcap's ``CiderScorer.compute_doc_freq`` / ``ref_len`` over the same images.

    Args:
        references: ``references[i]`` = the pre-tokenised reference captions of image i.

    Returns:
        The document frequencies and ``log(len(references))``.
    """
    sets = check_reference_sets(references)
    if not sets:
        raise ValueError("references is empty: document frequencies need at least one image")
    table = ngram_counts([ref for refs in sets for ref in refs], CIDER_MAX_N)
    freq = image_document_frequency(table.counts, np.array([len(refs) for refs in sets]))
    return CiderDocFreq(
        doc_freq=dict(zip(table.ngrams, freq.tolist(), strict=True)), log_num_docs=math.log(len(sets))
    )
