"""CVSE's released concept files, read without arbitrary unpickling, and GloVe vectors of the concept words.

The released code (BruceW91/CVSE, `data/<dataset>_annotations/Concept_annotations/`) ships:

- `category_concepts.json`: ``{word: index}`` of the K concepts;
- `<dataset>_adj_concepts.pkl`: a pickled dict of NumPy arrays, `nums` (K,) caption counts and `adj_all` (the
  co-occurrence counts; `adj_O_P`, `adj_O_M` are copies of it, used by other graph modes);
- `<dataset>_concepts_glove_word2vec.pkl`: a pickled (K, 300) float64 array of the concepts' GloVe vectors;
- `*_concept_label.json`: ``[{"img_id": "0", "concept_labels": [...]}, ...]``.

Only NumPy arrays and dtypes are rebuilt from the pickles (`read_numpy_pickle`).
"""

from __future__ import annotations

import importlib
import json
import pickle
from pathlib import Path
from typing import Any

import numpy as np

from vse_ray.data.precompute.concepts import ConceptGraph

_MULTIARRAY = importlib.import_module("numpy._core.multiarray")
# (module, name) a NumPy pickle may name; numpy.core was renamed numpy._core in NumPy 2.
_NUMPY_GLOBALS = {
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    **{
        (module, name): getattr(_MULTIARRAY, name)
        for module in ("numpy.core.multiarray", "numpy._core.multiarray")
        for name in ("_reconstruct", "scalar")
    },
}


class _Refused(pickle.UnpicklingError):
    """A pickle names a type outside the allow-list."""


class _NumpyUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _NUMPY_GLOBALS:
            raise _Refused(f"{module}.{name}")
        return _NUMPY_GLOBALS[(module, name)]


def read_numpy_pickle(path: str | Path) -> Any:
    """The object pickled in `path`, allowed to hold plain values and NumPy arrays only.

    Raises ValueError (one line naming the file) for any other type or an unreadable file."""
    path = Path(path)
    try:
        with path.open("rb") as f:
            return _NumpyUnpickler(f, encoding="latin1").load()
    except _Refused as err:
        raise ValueError(f"{path}: holds {err}, not a NumPy array or plain value; not loaded") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as err:
        raise ValueError(f"{path}: not a readable pickle ({type(err).__name__}: {err})") from None


def _single(folder: Path, pattern: str) -> Path:
    found = sorted(folder.glob(pattern))
    if len(found) != 1:
        raise ValueError(f"{folder}: expected one file {pattern}, found {[p.name for p in found]}")
    return found[0]


def read_official_concepts(folder: str | Path) -> ConceptGraph:
    """The released concept vocabulary and counts of `folder` (labels left empty: vse_ray labels each
    caption by the concept words it holds)."""
    folder = Path(folder)
    names = json.loads(_single(folder, "category_concepts.json").read_text())
    words = tuple(sorted(names, key=names.get))
    adj_path = _single(folder, "*_adj_concepts.pkl")
    result = read_numpy_pickle(adj_path)
    if not isinstance(result, dict) or not {"nums", "adj_all"} <= set(result):
        raise ValueError(f"{adj_path}: expected a dict with 'nums' and 'adj_all'")
    counts, cooccurrence = np.asarray(result["nums"]), np.asarray(result["adj_all"])
    if counts.shape != (len(words),) or cooccurrence.shape != (len(words), len(words)):
        raise ValueError(f"{adj_path}: shapes {counts.shape}, {cooccurrence.shape} for {len(words)} concepts")
    empty = np.zeros(0, dtype=np.int64)
    start = np.zeros(1, dtype=np.int64)
    return ConceptGraph(words, counts.astype(np.int64), cooccurrence.astype(np.int64), empty, start, empty)


def read_concept_vectors(path: str | Path, words: tuple[str, ...]) -> np.ndarray:
    """(K, dim) float32 vectors of `words`: from the released `.pkl` (rows in concept order) or a GloVe text
    file (``word v1 v2 ...`` per line). ValueError naming the file: a word without a vector, mixed sizes."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"concept_vectors {path}: no such file")
    if path.suffix == ".pkl":
        vectors = np.asarray(read_numpy_pickle(path), dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != len(words):
            raise ValueError(f"{path}: expected ({len(words)}, dim) vectors, got {vectors.shape}")
        return vectors
    wanted, found = set(words), {}
    with path.open(encoding="utf-8") as f:
        for line in f:
            word, _, rest = line.rstrip().partition(" ")
            if word in wanted and word not in found:
                found[word] = np.array(rest.split(), dtype=np.float32)
    missing = [w for w in words if w not in found]
    if missing:
        raise ValueError(f"{path}: no vector for {len(missing)} concept(s), e.g. {missing[:5]}")
    dims = {len(v) for v in found.values()}
    if len(dims) != 1:
        raise ValueError(f"{path}: vectors of different sizes {sorted(dims)}")
    return np.stack([found[w] for w in words])
