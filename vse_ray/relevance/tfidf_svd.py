"""TF-IDF + truncated SVD caption vectors: the semantic factor of LSEH (eq. 5-7)."""

from __future__ import annotations

import pickle
from collections.abc import Sequence

import numpy as np
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import TfidfVectorizer

from vse_ray.relevance._checks import check_texts

# LSEH pre-processing: lower-case, drop punctuation and non-alphabetic tokens, stop words and words
# shorter than 3 letters. (The paper also stems; no stemmer ships with the dependencies.)
_WORD_PATTERN = r"(?u)\b[^\W\d_]{3,}\b"


def make_tfidf_vectorizer() -> TfidfVectorizer:
    """The TF-IDF vectorizer of LSEH's pre-processing (scikit-learn smooth idf, l2-normalised rows)."""
    return TfidfVectorizer(lowercase=True, stop_words="english", token_pattern=_WORD_PATTERN)


class TfidfSvd:
    """Caption vectors ``B = A V_k`` of LSEH eq. 5 (A: TF-IDF matrix, V_k: top-k right singular vectors).

    LSEH's semantic factor is ``lambda * cos(D'_i, D'_j)`` between these vectors (eq. 6-7), so
    :meth:`transform` returns them L2-normalised.

    Args:
        k: Number of singular values (400 in LSEH); capped at ``min(vocabulary - 1, n_fit_texts)``.
        seed: Random state of the randomized SVD.

    Raises:
        ValueError: If ``k < 1``.
    """

    def __init__(self, k: int = 400, seed: int = 0) -> None:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        self.k, self.seed = k, seed
        self._vectorizer: TfidfVectorizer | None = None
        self._svd: TruncatedSVD | None = None

    @property
    def dim(self) -> int:
        """Output dimension k' after :meth:`fit`."""
        return int(self._fitted_svd().n_components)

    def fit(self, texts: Sequence[str]) -> TfidfSvd:
        """Learn the vocabulary, idf and the truncated SVD from ``texts``; raises ValueError if < 2 terms."""
        texts = check_texts("texts", texts)
        vectorizer = make_tfidf_vectorizer()
        try:
            tfidf = vectorizer.fit_transform(texts)
        except ValueError as err:  # empty vocabulary
            raise ValueError(f"texts: no usable terms to fit TF-IDF ({err})") from err
        n_texts, vocabulary = tfidf.shape
        if vocabulary < 2:
            raise ValueError(f"texts: TF-IDF vocabulary has {vocabulary} term(s), the SVD needs at least 2")
        k_eff = min(self.k, vocabulary - 1, n_texts)
        self._svd = TruncatedSVD(n_components=k_eff, random_state=self.seed).fit(tfidf)
        self._vectorizer = vectorizer
        return self

    def transform(self, texts: Sequence[str]) -> np.ndarray:
        """(n, k') float32 L2-normalised SVD vectors (all-zero rows for captions with no known term)."""
        svd = self._fitted_svd()
        reduced = svd.transform(self._vectorizer.transform(check_texts("texts", texts)))
        norms = np.linalg.norm(reduced, axis=1, keepdims=True)
        return np.divide(reduced, norms, out=np.zeros_like(reduced), where=norms > 0).astype(np.float32)

    def to_bytes(self) -> bytes:
        """Serialise the fitted model (pickle: load only files you trust)."""
        svd = self._fitted_svd()
        return pickle.dumps({"k": self.k, "seed": self.seed, "vectorizer": self._vectorizer, "svd": svd})

    @classmethod
    def from_bytes(cls, data: bytes) -> TfidfSvd:
        """Inverse of :meth:`to_bytes`."""
        state = pickle.loads(data)
        model = cls(k=state["k"], seed=state["seed"])
        model._vectorizer, model._svd = state["vectorizer"], state["svd"]
        return model

    def _fitted_svd(self) -> TruncatedSVD:
        if self._svd is None:
            raise ValueError("TfidfSvd is not fitted: call fit(texts) first")
        return self._svd
