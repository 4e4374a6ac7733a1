"""CVSE's concepts from captions against a per-caption loop written from the paper; the released files."""

from __future__ import annotations

import json
import pickle
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from vse_ray.data.precompute.concepts import STOPWORDS, ConceptGraph, build_concepts, concept_adjacency
from vse_ray.official.cvse_concepts import read_concept_vectors, read_numpy_pickle, read_official_concepts

WORDS = [
    "man",
    "dog",
    "red",
    "ball",
    "runs",
    "the",
    "a",
    "on",
    "grass",
    "girl",
    "blue",
    "sits",
    "park",
    "hat",
]


def _captions(seed: int = 0, n_images: int = 40, per_image: int = 5) -> tuple[list[list[str]], np.ndarray]:
    rng = np.random.default_rng(seed)
    texts = [list(rng.choice(WORDS, size=rng.integers(2, 9))) for _ in range(n_images * per_image)]
    image_ids = np.repeat(rng.permutation(1000)[:n_images], per_image)
    return texts, image_ids


def _vocab() -> dict[str, int]:
    return {"<pad>": 0, "<unk>": 1, "<start>": 2, "<end>": 3} | {w: i + 4 for i, w in enumerate(WORDS)}


def _paper_loop(texts: list[list[str]], image_ids: np.ndarray, k: int):
    """CVSE Sec. 3.2 caption by caption: the k words most captions mention are the concepts; N_i counts the
    captions mentioning concept i, E_ij those mentioning both i and j; an image's labels are the concepts
    of its captions."""
    mentioned = Counter()
    for words in texts:
        mentioned.update({w for w in words if w not in STOPWORDS})
    concepts = sorted(mentioned, key=lambda w: (-mentioned[w], w))[:k]
    index = {w: i for i, w in enumerate(concepts)}
    counts, cooccurrence = np.zeros(k, int), np.zeros((k, k), int)
    labels: dict[int, set[int]] = {}
    for words, image in zip(texts, image_ids, strict=True):
        present = sorted({index[w] for w in words if w in index})
        for i in present:
            counts[i] += 1
            for j in present:
                if i != j:
                    cooccurrence[i, j] += 1
        labels.setdefault(int(image), set()).update(present)
    return concepts, counts, cooccurrence, labels


@pytest.mark.parametrize("k", [3, 8, 11])
def test_concepts_equal_the_per_caption_loop(k: int) -> None:
    texts, image_ids = _captions()
    vocab = _vocab()
    tokens = [np.array([2, *(vocab[w] for w in words), 3]) for words in texts]
    graph = build_concepts(tokens, image_ids, vocab, k)
    words, counts, cooccurrence, labels = _paper_loop(texts, image_ids, k)
    assert graph.words == tuple(words)
    np.testing.assert_array_equal(graph.counts, counts)
    np.testing.assert_array_equal(graph.cooccurrence, cooccurrence)
    dense = graph.labels()
    assert list(graph.image_ids) == sorted(labels)
    for row, image in enumerate(graph.image_ids):
        assert set(np.flatnonzero(dense[row])) == labels[int(image)]


def test_fewer_words_than_concepts(tmp_path: Path) -> None:
    texts, image_ids = _captions()
    vocab = _vocab()
    tokens = [np.array([vocab[w] for w in words]) for words in texts]
    with pytest.raises(ValueError, match="concepts: 12 requested, the training captions mention 11 words"):
        build_concepts(tokens, image_ids, vocab, 12)
    graph = build_concepts(tokens, image_ids, vocab, 12, at_most=True)
    assert len(graph.words) == 11 and "the" not in graph.words
    graph.save(tmp_path / "c.npz")
    back = ConceptGraph.load(tmp_path / "c.npz")
    assert back.words == graph.words
    np.testing.assert_array_equal(back.labels(), graph.labels())


def test_adjacency_reweighting_by_hand() -> None:
    """P = E / N row-wise; edges where 5^(P - 0.02) - 5^(-0.02) >= 0.3 (P >= 0.1675); columns to 0.25; + I."""
    counts = np.array([10, 10, 100])
    cooccurrence = np.array([[0, 5, 1], [5, 0, 2], [1, 2, 0]])  # P(1|0) = 0.5, P(2|0) = 0.1, P(2|1) = 0.2
    edges = np.array([[0, 1, 0], [1, 0, 1], [0, 0, 0]], dtype=float)
    expected = edges * 0.25 / (edges.sum(0) + 1e-6) + np.identity(3)
    np.testing.assert_allclose(concept_adjacency(counts, cooccurrence), expected)


def _write_official(folder: Path, k: int = 3) -> None:
    folder.mkdir()
    (folder / "category_concepts.json").write_text(json.dumps({"dog": 1, "man": 0, "red": 2}))
    co = np.array([[0, 4, 1], [4, 0, 2], [1, 2, 0]], dtype=np.int32)
    adj = {"nums": np.array([9, 7, 5], dtype=np.int32), "adj_all": co, "adj_O_P": co, "adj_O_M": co}
    (folder / "x_adj_concepts.pkl").write_bytes(pickle.dumps(adj, protocol=3))
    vectors = np.arange(k * 4, dtype=np.float64).reshape(k, 4)
    (folder / "x_concepts_glove_word2vec.pkl").write_bytes(pickle.dumps(vectors, protocol=3))


def test_released_files_are_read_without_arbitrary_unpickling(tmp_path: Path) -> None:
    _write_official(tmp_path / "released")
    graph = read_official_concepts(tmp_path / "released")
    assert graph.words == ("man", "dog", "red")
    np.testing.assert_array_equal(graph.counts, [9, 7, 5])
    assert graph.cooccurrence[0, 1] == 4 and len(graph.image_ids) == 0
    vectors = read_concept_vectors(tmp_path / "released" / "x_concepts_glove_word2vec.pkl", graph.words)
    assert vectors.dtype == np.float32 and vectors.shape == (3, 4) and vectors[2, 3] == 11


class _Evil:
    def __reduce__(self):
        return (exec, ("print('unpickled')",))  # not print: Ray's progress bars replace it in the process


def test_other_types_in_a_pickle_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "evil.pkl"
    path.write_bytes(pickle.dumps({"nums": _Evil()}))
    with pytest.raises(ValueError, match=r"evil\.pkl: holds builtins\.exec, not a NumPy array"):
        read_numpy_pickle(path)
    (tmp_path / "cut.pkl").write_bytes(pickle.dumps(np.zeros(3))[:20])
    with pytest.raises(ValueError, match=r"cut\.pkl: not a readable pickle"):
        read_numpy_pickle(tmp_path / "cut.pkl")


def test_glove_text_vectors(tmp_path: Path) -> None:
    path = tmp_path / "glove.txt"
    path.write_text("man 1 2\nthe 0 0\ndog 3 4\nman 9 9\n")
    np.testing.assert_array_equal(read_concept_vectors(path, ("dog", "man")), [[3, 4], [1, 2]])
    with pytest.raises(ValueError, match=r"glove\.txt: no vector for 1 concept\(s\), e\.g\. \['cat'\]"):
        read_concept_vectors(path, ("dog", "cat"))
