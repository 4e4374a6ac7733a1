"""CVSE's concepts: vocabulary, per-image labels and co-occurrence graph, from the training captions.

CVSE (Wang et al., ECCV 2020, Sec. 3.2) takes the K most frequent words of the training captions as concepts
(K = 300), labels each image with the concepts its captions mention, and builds the concept graph from
co-occurrence: E_ij counts the captions that mention both concepts i and j (i != j), N_i the captions that
mention concept i, and P(C_j | C_i) = E_ij / N_i (eq. 1). The released concept files hold exactly these
counts (`adj_all`, `nums`); `concept_adjacency` re-weights them as the released code does (eqs. 2-3).

Frequency here is the number of training captions that mention a word. Function words (`STOPWORDS`) are left
out; the released vocabulary keeps nouns, adjectives and verbs chosen with a part-of-speech tagger, which
vse_ray does not ship.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from vse_ray.data.precompute.lemmas import NounLemmatizer
from vse_ray.special_tokens import SPECIAL_TOKENS

CONCEPTS_FILE = "concepts.npz"
DEFAULT_CONCEPTS = 300
# CVSE's re-weighting of P(C_j | C_i): f(P) = scale^(P - shift) - scale^(-shift) (eq. 2), then edges where
# f >= threshold (eq. 3), each column scaled to 0.25 and self-loops added (the released gen_A_concept).
RESCALE_BASE, RESCALE_SHIFT, EDGE_THRESHOLD, NEIGHBOUR_WEIGHT = 5.0, 0.02, 0.3, 0.25
STOPWORDS = frozenset(
    "a an the and or but of in on at to from by with for into onto over under near up down out off as "
    "than then there here this that these those it its his her their they them he she we you i me my our "
    "your who whom which what while where when some any each both all no not be been being was were am do "
    "does did so very too can will just".split()
)


@dataclass(frozen=True)
class ConceptGraph:
    """Concept words, their caption counts N (K,), co-occurrence counts E (K, K) with a zero diagonal, and
    the concepts of each image as CSR rows (`label_indptr`, `label_indices`) in the order of `image_ids`."""

    words: tuple[str, ...]
    counts: np.ndarray
    cooccurrence: np.ndarray
    image_ids: np.ndarray
    label_indptr: np.ndarray
    label_indices: np.ndarray

    def labels(self) -> np.ndarray:
        """(n_images, K) bool: image × concept."""
        data = np.ones(len(self.label_indices), dtype=bool)
        shape = (len(self.image_ids), len(self.words))
        return sp.csr_matrix((data, self.label_indices, self.label_indptr), shape=shape).toarray()

    def save(self, path: str | Path) -> None:
        np.savez_compressed(
            path,
            words=np.array(self.words, dtype=str),
            counts=self.counts,
            cooccurrence=self.cooccurrence,
            image_ids=self.image_ids,
            label_indptr=self.label_indptr,
            label_indices=self.label_indices,
        )

    @classmethod
    def load(cls, path: str | Path) -> ConceptGraph:
        with np.load(path, allow_pickle=False) as f:
            return cls(
                tuple(str(w) for w in f["words"]),
                f["counts"],
                f["cooccurrence"],
                f["image_ids"],
                f["label_indptr"],
                f["label_indices"],
            )


def build_concepts(
    tokens: Sequence[np.ndarray],
    image_ids: np.ndarray,
    vocab: dict[str, int],
    k: int = DEFAULT_CONCEPTS,
    stopwords: frozenset[str] = STOPWORDS,
    at_most: bool = False,
) -> ConceptGraph:
    """The concepts of captions given as vocabulary ids (`tokens`, one array per caption) of `image_ids`.

    Ties in frequency go to the word that comes first alphabetically. When the captions mention fewer than
    `k` candidate words: all of them if `at_most`, else ValueError.
    """
    words_by_id = {i: w for w, i in vocab.items() if w not in SPECIAL_TOKENS and w not in stopwords}
    rows = np.repeat(np.arange(len(tokens)), [len(t) for t in tokens])
    cols = (
        np.concatenate([np.asarray(t, dtype=np.int64) for t in tokens]) if len(tokens) else np.zeros(0, int)
    )
    size = max(max(vocab.values()) + 1, int(cols.max(initial=0)) + 1)
    mentions = sp.csr_matrix((np.ones(len(cols), dtype=np.int64), (rows, cols)), shape=(len(tokens), size))
    mentions.data[:] = 1  # a word counts once per caption
    per_word = np.asarray(mentions.sum(0)).ravel()
    candidates = [i for i in words_by_id if per_word[i] > 0]
    if len(candidates) < k and not at_most:
        raise ValueError(f"concepts: {k} requested, the training captions mention {len(candidates)} words")
    chosen = sorted(candidates, key=lambda i: (-per_word[i], words_by_id[i]))[:k]
    present = mentions[:, chosen].astype(np.int64)  # caption × concept, 0/1
    cooccurrence = np.asarray((present.T @ present).todense())
    np.fill_diagonal(cooccurrence, 0)
    images, caption_image = np.unique(np.asarray(image_ids, dtype=np.int64), return_inverse=True)
    owner = sp.csr_matrix(
        (np.ones(len(tokens), dtype=np.int64), (caption_image, np.arange(len(tokens)))),
        shape=(len(images), len(tokens)),
    )
    labels = (owner @ present).tocsr()
    labels.eliminate_zeros()
    labels.sort_indices()
    return ConceptGraph(
        tuple(words_by_id[i] for i in chosen),
        per_word[chosen].astype(np.int64),
        cooccurrence.astype(np.int64),
        images,
        labels.indptr.astype(np.int64),
        labels.indices.astype(np.int64),
    )


def concept_adjacency(counts: np.ndarray, cooccurrence: np.ndarray) -> np.ndarray:
    """CVSE's re-weighted concept graph A (K, K), float64, from N and E (see the module docstring).

    A = B' + I with P_ij = E_ij / N_i, f = 5^(P - 0.02) - 5^(-0.02), B_ij = [f_ij >= 0.3] and B' its columns
    scaled to 0.25 (each divided by its sum + 1e-6), as the released `gen_A_concept` (mode "Complex").
    """
    conditional = cooccurrence / np.maximum(counts, 1)[:, None].astype(np.float64)
    rescaled = np.power(RESCALE_BASE, conditional - RESCALE_SHIFT) - np.power(RESCALE_BASE, -RESCALE_SHIFT)
    edges = (rescaled >= EDGE_THRESHOLD).astype(np.float64)
    edges = edges * NEIGHBOUR_WEIGHT / (edges.sum(0, keepdims=True) + 1e-6)
    return edges + np.identity(len(counts))


def token_concept_index(
    vocab: Mapping[str, int],
    words: Sequence[str],
    vocab_size: int,
    lemmatizer: NounLemmatizer | None = None,
) -> np.ndarray:
    """(vocab_size,) int64: the concept index of each token id, -1: none. Without `lemmatizer` a token is
    the concept word itself; with it, as the released loader labels test captions, a token whose lemma is
    a concept word's lemma is the first concept with that lemma."""
    lemma = lemmatizer.lemma if lemmatizer is not None else str
    first: dict[str, int] = {}
    for index, word in enumerate(words):
        first.setdefault(lemma(word), index)
    result = np.full(vocab_size, -1, dtype=np.int64)
    for word, token in vocab.items():
        if token < vocab_size and (concept := first.get(lemma(word))) is not None:
            result[token] = concept
    return result


def concepts_of_split(data_dir: str, k: int = DEFAULT_CONCEPTS, at_most: bool = False) -> ConceptGraph:
    """The concepts of the train split of a precompute folder: its `concepts.npz` when that holds `k`
    concepts, else built from its train captions (`at_most`: see `build_concepts`)."""
    from vse_ray.data.store.readers import load_captions, load_vocab

    path = Path(data_dir) / CONCEPTS_FILE
    if path.is_file():
        graph = ConceptGraph.load(path)
        if len(graph.words) == k:
            return graph
    table = load_captions(data_dir, "train", ["image_id", "tokens"])
    tokens = [np.asarray(t, dtype=np.int64) for t in table["tokens"].to_pylist()]
    return build_concepts(tokens, table["image_id"].to_numpy(), load_vocab(data_dir), k, at_most=at_most)


def write_concepts(data_dir: str | Path, k: int = DEFAULT_CONCEPTS) -> int:
    """Build the train split's concepts (at most `k`: a small vocabulary gives fewer) and write them to
    `<data_dir>/concepts.npz`; the number of images labelled (the precompute stage)."""
    path = Path(data_dir) / CONCEPTS_FILE
    path.unlink(missing_ok=True)
    graph = concepts_of_split(str(data_dir), k, at_most=True)
    graph.save(path)
    return len(graph.image_ids)
