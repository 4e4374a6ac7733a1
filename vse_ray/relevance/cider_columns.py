"""The CIDEr-D caption columns precompute stores (`sources.CIDER_COLUMNS`): computed from caption texts
under the train document frequencies, and written as Arrow arrays."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from vse_ray.relevance.cider_doc_freq import CiderDocFreq
from vse_ray.relevance.cider_vectors import CiderVectors
from vse_ray.relevance.tokenize import tokenize

# Arrow types of the columns: hashed n-gram ids, their tf-idf weights, the norm of each n-gram order's part,
# pycocoevalcap's length.
NGRAMS, TFIDF, NORMS, LENGTH = (
    pa.list_(pa.int64()),
    pa.list_(pa.float64()),
    pa.list_(pa.float64(), 4),
    pa.int32(),
)


def cider_vectoriser(doc_freq: dict[str, Any]) -> Callable[[list[str]], dict[str, np.ndarray]]:
    """Caption texts → their CIDEr-D vector columns, under ``doc_freq`` (``CiderDocFreq.to_dict()``)."""
    frequencies = CiderDocFreq.from_dict(doc_freq)

    def columns(texts: list[str]) -> dict[str, np.ndarray]:
        cider = CiderVectors.from_texts([tokenize(text) for text in texts], frequencies)
        return {
            "cider_ngrams": _row_arrays(cider.indptr, cider.ngrams),
            "cider_tfidf": _row_arrays(cider.indptr, cider.tfidf),
            "cider_norms": cider.norms,
            "cider_length": cider.length,
        }

    return columns


def _row_arrays(indptr: np.ndarray, values: np.ndarray) -> np.ndarray:
    """CSR values → object array holding each row's values."""
    rows = np.empty(len(indptr) - 1, dtype=object)
    rows[:] = np.split(values, indptr[1:-1])
    return rows


def cider_arrays(batch: dict[str, np.ndarray]) -> list[pa.Array]:
    """The CIDEr-D vector columns of a batch (per-row arrays of ids and weights, (n, 4) norms, lengths)."""
    return [
        pa.array([np.asarray(row, dtype=np.int64) for row in batch["cider_ngrams"]], type=NGRAMS),
        pa.array([np.asarray(row, dtype=np.float64) for row in batch["cider_tfidf"]], type=TFIDF),
        pa.FixedSizeListArray.from_arrays(
            pa.array(np.asarray(batch["cider_norms"], dtype=np.float64).reshape(-1)), NORMS.list_size
        ),
        pa.array(np.asarray(batch["cider_length"], dtype=np.int32), type=LENGTH),
    ]
