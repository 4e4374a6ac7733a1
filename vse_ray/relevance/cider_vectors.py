"""CIDEr-D tf-idf vectors of captions: computed once from the text (precompute), read back per batch.

A caption's vector is what pycocoevalcap's ``CiderScorer.counts2vec`` builds: for every 1..4-gram g of the
caption, ``tf[g] * (log N - log max(1, df[g]))`` with the document frequencies ``df`` of a
:class:`~vse_ray.relevance.cider_doc_freq.CiderDocFreq` (the train images), the norm of each order's part
and the caption length (pycocoevalcap counts the bigrams: ``max(words - 1, 0)``). N-grams are stored as
hashed ids, so captions of any split share one id space with no vocabulary to keep.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vse_ray.relevance._checks import check_texts
from vse_ray.relevance.cider_doc_freq import CIDER_MAX_N, CiderDocFreq
from vse_ray.relevance.ngrams import ngram_counts

# An id is 61 bits of the n-gram's BLAKE2b hash times 4 plus (order - 1): ``id & 3`` is the order minus 1.
# Two distinct n-grams of one batch share an id with probability about (n-grams in the batch)^2 / 2^62.
_HASH_BITS = 61


def ngram_ids(ngrams: Sequence[str], order: np.ndarray) -> np.ndarray:
    """Stable non-negative int64 id of each n-gram (words joined by single spaces) of the given orders."""
    hashes = np.fromiter(
        (
            int.from_bytes(hashlib.blake2b(g.encode(), digest_size=8).digest(), "little") >> (64 - _HASH_BITS)
            for g in ngrams
        ),
        dtype=np.int64,
        count=len(ngrams),
    )
    return hashes * CIDER_MAX_N + (np.asarray(order, dtype=np.int64) - 1)


@dataclass(frozen=True)
class CiderVectors:
    """Sparse CIDEr-D tf-idf vectors of n captions, one CSR row each.

    Attributes:
        indptr: (n + 1,) int64; row k's entries are ``indptr[k]:indptr[k + 1]``.
        ngrams: (nnz,) int64 n-gram ids (:func:`ngram_ids`); ``ngrams & 3`` is the order minus 1.
        tfidf: (nnz,) float64 tf-idf weights, all > 0 (n-grams of idf 0 add nothing and are left out).
        norms: (n, 4) float64 norm of each order's part of the vector.
        length: (n,) int64 pycocoevalcap's caption length (its bigram count).
    """

    indptr: np.ndarray
    ngrams: np.ndarray
    tfidf: np.ndarray
    norms: np.ndarray
    length: np.ndarray

    def __len__(self) -> int:
        return len(self.length)

    @classmethod
    def from_texts(cls, texts: Sequence[str], doc_freq: CiderDocFreq) -> CiderVectors:
        """Vectors of pre-tokenised ``texts`` (see :func:`~vse_ray.relevance.tokenize`) under ``doc_freq``."""
        texts = check_texts("texts", texts)
        table = ngram_counts(texts, CIDER_MAX_N)
        idf = doc_freq.log_num_docs - np.log(np.maximum(doc_freq.lookup(table.ngrams), 1.0))
        counts = table.counts
        columns = counts.indices
        weights = counts.data * idf[columns]
        orders = table.order[columns] - 1
        rows = np.repeat(np.arange(len(texts)), np.diff(counts.indptr))
        norms = np.zeros((len(texts), CIDER_MAX_N))
        np.add.at(norms, (rows, orders), weights**2)
        length = np.zeros(len(texts), dtype=np.int64)
        np.add.at(length, rows[orders == 1], counts.data[orders == 1])
        keep = weights > 0
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows[keep], minlength=len(texts)))])
        return cls(
            indptr=indptr.astype(np.int64),
            ngrams=ngram_ids(table.ngrams, table.order)[columns[keep]],
            tfidf=weights[keep].astype(np.float64),
            norms=np.sqrt(norms),
            length=length,
        )

    def take(self, rows: np.ndarray) -> CiderVectors:
        """The vectors of ``rows`` (an int array of row indices, repeats allowed), in that order."""
        rows = np.asarray(rows, dtype=np.int64)
        starts, sizes = self.indptr[rows], np.diff(self.indptr)[rows]
        indptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        entries = np.arange(indptr[-1]) - np.repeat(indptr[:-1] - starts, sizes)
        return CiderVectors(
            indptr=indptr,
            ngrams=self.ngrams[entries],
            tfidf=self.tfidf[entries],
            norms=self.norms[rows],
            length=self.length[rows],
        )


@dataclass(frozen=True)
class CiderBatch:
    """What the (B, B) CIDEr-D matrix of one batch is built from.

    Attributes:
        hypotheses: The B batch captions (the matrix columns).
        references: The reference captions of the batch's S distinct images, image after image.
        set_sizes: (S,) number of references of each distinct image.
        image_set: (B,) index in 0..S-1 of each batch row's image (the matrix rows).
    """

    hypotheses: CiderVectors
    references: CiderVectors
    set_sizes: np.ndarray
    image_set: np.ndarray


class CiderReferences:
    """The CIDEr-D vectors of a split's captions, looked up by caption id and grouped by image.

    Every caption of an image is one of its references (the captions the run trains on), so a batch's
    hypotheses and the reference sets of its images are rows of the same table.

    Args:
        vectors: One row per caption.
        caption_ids: (n,) caption id of each row (unique).
        image_ids: (n,) image id of each row.
    """

    def __init__(self, vectors: CiderVectors, caption_ids: np.ndarray, image_ids: np.ndarray):
        caption_ids, image_ids = np.asarray(caption_ids, np.int64), np.asarray(image_ids, np.int64)
        if not len(vectors) == len(caption_ids) == len(image_ids):
            raise ValueError(
                f"CiderReferences: {len(vectors)} vectors, {len(caption_ids)} caption ids and "
                f"{len(image_ids)} image ids must be equal in number"
            )
        by_image = np.lexsort((caption_ids, image_ids))
        self.vectors = vectors.take(by_image)
        self._caption_order = np.argsort(caption_ids[by_image], kind="stable")
        self._sorted_captions = caption_ids[by_image][self._caption_order]
        self.image_ids, first = np.unique(image_ids[by_image], return_index=True)
        self._image_ptr = np.append(first, len(image_ids))

    def _rows(self, sorted_ids: np.ndarray, ids: np.ndarray, what: str) -> np.ndarray:
        """Position of each of ``ids`` in ``sorted_ids``; ValueError naming the first one absent."""
        pos = np.minimum(np.searchsorted(sorted_ids, ids), max(len(sorted_ids) - 1, 0))
        missing = sorted_ids[pos] != ids if len(sorted_ids) else np.ones(len(ids), dtype=bool)
        if missing.any():
            raise ValueError(f"CiderReferences: no CIDEr-D vector for {what} {int(ids[missing.argmax()])}")
        return pos

    def batch(self, caption_ids: np.ndarray, image_ids: np.ndarray) -> CiderBatch:
        """The hypotheses ``caption_ids`` and the reference sets of the images ``image_ids`` (rows)."""
        caption_ids, image_ids = np.asarray(caption_ids, np.int64), np.asarray(image_ids, np.int64)
        hyp_rows = self._caption_order[self._rows(self._sorted_captions, caption_ids, "caption_id")]
        images, image_set = np.unique(image_ids, return_inverse=True)
        which = self._rows(self.image_ids, images, "image_id")
        starts, stops = self._image_ptr[which], self._image_ptr[which + 1]
        sizes = stops - starts
        ref_rows = np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes - starts, sizes)
        return CiderBatch(
            hypotheses=self.vectors.take(hyp_rows),
            references=self.vectors.take(ref_rows),
            set_sizes=sizes,
            image_set=image_set.reshape(-1),
        )
