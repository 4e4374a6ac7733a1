"""TF-IDF + truncated SVD caption vectors: the semantic factor of LSEH (eq. 5-7).

The fitted model is kept as plain arrays (vocabulary, idf, SVD components), so it is stored as an ``.npz``
that loads without running code (``np.load(..., allow_pickle=False)``), unlike a pickled scikit-learn model.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.preprocessing import normalize

from vse_ray.json_files import atomic_path
from vse_ray.relevance._checks import check_texts

if TYPE_CHECKING:
    from nltk.stem.porter import PorterStemmer

# LSEH pre-processing: lower-case, drop punctuation and non-alphabetic tokens, stop words and words
# shorter than 3 letters; with ``stem``, Porter stems of the remaining words.
_WORD_PATTERN = r"(?u)\b[^\W\d_]{3,}\b"
_TOKENISATION = {"lowercase": True, "stop_words": "english", "token_pattern": _WORD_PATTERN}
ARRAY_NAMES = ("vocabulary", "idf", "components", "k", "seed")
# arrays of the options added later, with the values that files written without them were made with
OPTION_DEFAULTS = {"n_iter": 5, "stem": False, "unit": True}


@cache
def _stemmer() -> PorterStemmer:
    try:
        from nltk.stem.porter import PorterStemmer
    except ImportError as err:
        raise ValueError("svd stemming needs nltk, which is not installed: pip install nltk") from err
    return PorterStemmer()


@cache
def porter_stem(word: str) -> str:
    """nltk's Porter stemmer (its default NLTK_EXTENSIONS mode), as LSEH's released SVD script uses."""
    return _stemmer().stem(word)


class _StemmedWords:
    """The vectorizers' analyzer with ``stem``: scikit-learn's words, Porter-stemmed after stop-word
    removal (a class, so that a fitted vectorizer pickles)."""

    def __init__(self) -> None:
        self.words = CountVectorizer(**_TOKENISATION).build_analyzer()

    def __call__(self, text: str) -> list[str]:
        return [porter_stem(word) for word in self.words(text)]


def _text_options(stem: bool) -> dict:
    """Keyword arguments of the vectorizers: the tokenisation, or with ``stem`` the analyzer that does it."""
    return {"analyzer": _StemmedWords()} if stem else _TOKENISATION


def make_tfidf_vectorizer(stem: bool = False) -> TfidfVectorizer:
    """The TF-IDF vectorizer of LSEH's pre-processing (scikit-learn smooth idf, l2-normalised rows)."""
    return TfidfVectorizer(**_text_options(stem))


class TfidfSvd:
    """Caption vectors ``B = A V_k`` of LSEH eq. 5 (A: TF-IDF matrix, V_k: top-k right singular vectors).

    LSEH's semantic factor is ``lambda * cos(D'_i, D'_j)`` between these vectors (eq. 6-7), so
    :meth:`transform` returns them L2-normalised (``unit``). :meth:`transform` computes what scikit-learn's
    ``TfidfVectorizer.transform`` then ``TruncatedSVD.transform`` compute (term counts × idf, rows
    l2-normalised, times ``components.T``) from the stored arrays.

    LSEH's released SVD script (yangong23/VSEnetworksLSEH, ``SVDdescriptions.py``) Porter-stems the words
    (``stem=True``; it removes nltk's stop words before stemming and scikit-learn's after, here
    scikit-learn's before), runs the randomized SVD with ``n_iter=100`` and ``seed=122``, and keeps the
    vectors unnormalised (``unit=False``; its loss divides their dot products by a row maximum).

    Args:
        k: Number of singular values (400 in LSEH); capped at ``min(vocabulary - 1, n_fit_texts)``.
        seed: Random state of the randomized SVD.
        n_iter: Power iterations of the randomized SVD (scikit-learn's default 5).
        stem: Porter-stem the words (needs nltk).
        unit: L2-normalise the output vectors.

    Raises:
        ValueError: If ``k < 1`` or ``n_iter < 0``.
    """

    def __init__(
        self, k: int = 400, seed: int = 0, n_iter: int = 5, stem: bool = False, unit: bool = True
    ) -> None:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if n_iter < 0:
            raise ValueError(f"n_iter must be >= 0, got {n_iter}")
        self.k, self.seed, self.n_iter, self.stem, self.unit = k, seed, n_iter, stem, unit
        self.vocabulary: np.ndarray | None = None  # (V,) terms in column order
        self.idf: np.ndarray | None = None  # (V,) float64
        self.components: np.ndarray | None = None  # (k', V) float64
        self._counter: CountVectorizer | None = None

    @property
    def dim(self) -> int:
        """Output dimension k' after :meth:`fit`."""
        return int(self._fitted()[2].shape[0])

    def fit(self, texts: Sequence[str]) -> TfidfSvd:
        """Learn the vocabulary, idf and the truncated SVD from ``texts``; raises ValueError if < 2 terms."""
        texts = check_texts("texts", texts)
        vectorizer = make_tfidf_vectorizer(self.stem)
        try:
            tfidf = vectorizer.fit_transform(texts)
        except ValueError as err:  # empty vocabulary
            raise ValueError(f"texts: no usable terms to fit TF-IDF ({err})") from err
        n_texts, vocabulary = tfidf.shape
        if vocabulary < 2:
            raise ValueError(f"texts: TF-IDF vocabulary has {vocabulary} term(s), the SVD needs at least 2")
        k_eff = min(self.k, vocabulary - 1, n_texts)
        svd = TruncatedSVD(n_components=k_eff, n_iter=self.n_iter, random_state=self.seed).fit(tfidf)
        terms = sorted(vectorizer.vocabulary_, key=vectorizer.vocabulary_.__getitem__)
        return self._set(np.array(terms, dtype=str), vectorizer.idf_, svd.components_)

    def transform(self, texts: Sequence[str]) -> np.ndarray:
        """(n, k') float32 SVD vectors, L2-normalised if ``unit`` (all-zero rows for captions with no known
        term)."""
        _, idf, components = self._fitted()
        counts = self._term_counter().transform(check_texts("texts", texts)).astype(np.float64)
        reduced = normalize(counts.multiply(idf).tocsr()) @ components.T
        if not self.unit:
            return reduced.astype(np.float32)
        norms = np.linalg.norm(reduced, axis=1, keepdims=True)
        return np.divide(reduced, norms, out=np.zeros_like(reduced), where=norms > 0).astype(np.float32)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The fitted model as arrays (``ARRAY_NAMES``); no Python objects."""
        vocabulary, idf, components = self._fitted()
        return {
            "vocabulary": vocabulary,
            "idf": idf,
            "components": components,
            "k": np.array(self.k),
            "seed": np.array(self.seed),
            "n_iter": np.array(self.n_iter),
            "stem": np.array(self.stem),
            "unit": np.array(self.unit),
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> TfidfSvd:
        """Inverse of :meth:`to_arrays`; ValueError naming a missing or mis-shaped array (the arrays of
        ``OPTION_DEFAULTS`` may be missing)."""
        missing = [name for name in ARRAY_NAMES if name not in arrays]
        if missing:
            raise ValueError(f"TF-IDF + SVD arrays: missing {missing}, expected {list(ARRAY_NAMES)}")
        vocabulary, idf, components = (np.asarray(arrays[n]) for n in ("vocabulary", "idf", "components"))
        if vocabulary.ndim != 1 or idf.shape != vocabulary.shape or components.shape[1:] != vocabulary.shape:
            raise ValueError(
                f"TF-IDF + SVD arrays: vocabulary {vocabulary.shape}, idf {idf.shape} and components "
                f"{components.shape} do not agree (expected (V,), (V,), (k, V))"
            )
        options = {name: arrays.get(name, default) for name, default in OPTION_DEFAULTS.items()}
        model = cls(
            k=int(arrays["k"]),
            seed=int(arrays["seed"]),
            n_iter=int(options["n_iter"]),
            stem=bool(options["stem"]),
            unit=bool(options["unit"]),
        )
        return model._set(vocabulary.astype(str), idf.astype(np.float64), components.astype(np.float64))

    def save(self, path: str | Path) -> None:
        """Write :meth:`to_arrays` as an ``.npz`` (through a temporary file renamed into place)."""
        path = Path(path)
        arrays: dict[str, Any] = self.to_arrays()
        with atomic_path(path, f".{path.stem}.{os.getpid()}.tmp.npz") as tmp:  # np.savez keeps the suffix
            np.savez(tmp, **arrays)

    @classmethod
    def load(cls, path: str | Path) -> TfidfSvd:
        """Read a model written by :meth:`save` (arrays only: ``allow_pickle=False``)."""
        with np.load(path, allow_pickle=False) as arrays:
            try:
                return cls.from_arrays(dict(arrays))
            except ValueError as err:
                raise ValueError(f"{path}: {err}") from err

    def _set(self, vocabulary: np.ndarray, idf: np.ndarray, components: np.ndarray) -> TfidfSvd:
        self.vocabulary, self.idf, self.components = vocabulary, idf, components
        self._counter = CountVectorizer(  # term counts over the stored vocabulary
            **_text_options(self.stem),
            vocabulary={term: i for i, term in enumerate(vocabulary.tolist())},
        )
        return self

    def _term_counter(self) -> CountVectorizer:
        if self._counter is None:
            raise ValueError("TfidfSvd is not fitted: call fit(texts) first")
        return self._counter

    def _fitted(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self.components is None or self.idf is None or self.vocabulary is None:
            raise ValueError("TfidfSvd is not fitted: call fit(texts) first")
        return self.vocabulary, self.idf, self.components


def fit_or_load(texts: Sequence[str], config: Any, path: Path) -> TfidfSvd:
    """The model saved at ``path``, or one fitted on ``texts`` with the precompute config's ``svd_dim``,
    ``svd_seed`` (default ``seed``), ``svd_n_iter``, ``svd_stem`` and ``svd_unit``, then saved there.

    An ``svd_dim`` the data cannot give is reduced (the saved model holds the components it has), with a
    warning when the value was asked for and an INFO record when it is the config's default: a small
    data set (the demo's) is not warned about settings the user did not choose."""
    if path.exists():
        return TfidfSvd.load(path)
    model = TfidfSvd(
        k=config.svd_dim,
        seed=config.seed if config.svd_seed is None else config.svd_seed,
        n_iter=config.svd_n_iter,
        stem=config.svd_stem,
        unit=config.svd_unit,
    ).fit(texts)
    if model.dim < config.svd_dim:
        default = next(f.default for f in dataclasses.fields(config) if f.name == "svd_dim")
        logging.getLogger(__name__).log(
            logging.INFO if config.svd_dim == default else logging.WARNING,  # a warning for a value asked for
            "svd_dim: reduced from %d to %d: the truncated SVD needs fewer components than the %d train "
            "captions and their %d TF-IDF terms",
            config.svd_dim,
            model.dim,
            len(texts),
            len(model._fitted()[0]),
        )
    model.save(path)
    return TfidfSvd.load(path)
