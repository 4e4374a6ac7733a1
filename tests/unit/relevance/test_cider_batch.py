"""A batch's CIDEr-D from stored tf-idf vectors against pycocoevalcap on every (caption, image) pair."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vse_ray.relevance import CiderBatch, CiderReferences, CiderVectors, cider_doc_freq
from vse_ray.relevance.cider_batch import cider_batch_matrix
from vse_ray.relevance.cider_vectors import ngram_ids

from ._inputs import EDGE_CAPTIONS, make_captions, make_reference_sets
from ._pycoco import reference_all_pairs


@pytest.fixture(scope="module")
def corpus() -> tuple[list[list[str]], np.ndarray, np.ndarray]:
    """Reference sets of uneven sizes with empty, one-word and repetitive captions; caption and image ids."""
    refs = make_reference_sets(9, seed=4)
    refs[2] = refs[2] + EDGE_CAPTIONS
    refs[5] = [*refs[5], "a a a a a a dog a a", "a dog a dog a dog a dog"]
    image_ids = np.repeat(np.arange(100, 100 + 9), [len(r) for r in refs])
    caption_ids = np.random.default_rng(0).permutation(len(image_ids)) + 1000  # rows not in id order
    return refs, caption_ids, image_ids


def _references(refs: list[list[str]], caption_ids, image_ids, doc_freq) -> CiderReferences:
    vectors = CiderVectors.from_texts([r for ref_set in refs for r in ref_set], doc_freq)
    return CiderReferences(vectors, caption_ids, image_ids)


@pytest.mark.parametrize("external_doc_freq", [True, False])
def test_batch_matrix_equals_pycocoevalcap_for_every_pair(corpus, external_doc_freq: bool) -> None:
    """Rows: the batch captions' images, repeats included; columns: the batch captions, which are among the
    references (as in training). Document frequencies over a larger image set (train) or over the images of
    one pycocoevalcap call."""
    refs, caption_ids, image_ids = corpus
    doc_freq = cider_doc_freq(refs + (make_reference_sets(30, seed=5) if external_doc_freq else []))
    store = _references(refs, caption_ids, image_ids, doc_freq)
    rows = np.random.default_rng(1).permutation(len(image_ids))  # every caption, images repeated
    batch_images, batch_captions = image_ids[rows], caption_ids[rows]
    got = cider_batch_matrix(store.batch(batch_captions, batch_images))
    flat = [r for ref_set in refs for r in ref_set]
    hyps = [flat[i] for i in rows]
    expected = reference_all_pairs(hyps, refs, doc_freq if external_doc_freq else None).T
    assert got.dtype == torch.float64 and got.shape == (len(rows), len(rows))
    np.testing.assert_allclose(got.numpy(), expected[batch_images - 100], rtol=0, atol=1e-12)
    assert got.max() > 3.0 and (got == 0).any()  # own references score high; the empty caption scores 0


def test_hypotheses_outside_the_references_and_unseen_ngrams(corpus) -> None:
    """CiderBatch built by hand: hypotheses that are no reference, with n-grams no image has (idf log N)."""
    refs, _, _ = corpus
    doc_freq = cider_doc_freq(refs)
    hyps = [*make_captions(6, seed=11), "zebra zebra on the moon", "a dog a dog"]
    batch = CiderBatch(
        hypotheses=CiderVectors.from_texts(hyps, doc_freq),
        references=CiderVectors.from_texts([r for ref_set in refs for r in ref_set], doc_freq),
        set_sizes=np.array([len(r) for r in refs]),
        image_set=np.arange(len(hyps)) % len(refs),
    )
    expected = reference_all_pairs(hyps, refs, doc_freq).T[np.arange(len(hyps)) % len(refs)]
    np.testing.assert_allclose(cider_batch_matrix(batch).numpy(), expected, rtol=0, atol=1e-12)


def test_vectors_are_pycocoevalcap_counts2vec() -> None:
    """Weights tf * idf per n-gram, norm per order, length = bigram count; zero-idf n-grams left out."""
    doc_freq = cider_doc_freq([["a dog runs", "a dog"], ["a cat"]])
    vectors = CiderVectors.from_texts(["a dog a dog", "cat", ""], doc_freq)
    assert vectors.indptr.tolist() == [0, 6, 7, 7]  # "a" is in every image: idf 0, left out
    log2 = np.log(2.0)
    weights = dict(zip(vectors.ngrams[:6].tolist(), vectors.tfidf[:6].tolist(), strict=True))
    assert weights[int(ngram_ids(["dog"], [1])[0])] == pytest.approx(2 * (log2 - np.log(1)))
    assert weights[int(ngram_ids(["a dog"], [2])[0])] == pytest.approx(2 * (log2 - np.log(1)))
    assert weights[int(ngram_ids(["dog a"], [2])[0])] == pytest.approx(log2)  # unseen: df 0 counts as 1
    assert vectors.length.tolist() == [3, 0, 0]
    np.testing.assert_allclose(vectors.norms[0], [2 * log2, np.sqrt(5) * log2, np.sqrt(2) * log2, log2])


def test_ngram_ids_are_stable_and_carry_the_order() -> None:
    """Stored ids must not change between versions: pinned values."""
    ids = ngram_ids(["a", "a dog", "a dog runs", "a dog runs fast"], np.array([1, 2, 3, 4]))
    assert (ids % 4).tolist() == [0, 1, 2, 3] and (ids >= 0).all()
    assert ids.tolist() == ngram_ids(["a", "a dog", "a dog runs", "a dog runs fast"], [1, 2, 3, 4]).tolist()
    assert int(ids[1]) == 7_182_415_866_560_184_701  # "a dog", order 2


def test_take_gathers_rows_in_order_with_repeats(corpus) -> None:
    refs, _, _ = corpus
    vectors = CiderVectors.from_texts([r for ref_set in refs for r in ref_set], cider_doc_freq(refs))
    part = vectors.take(np.array([4, 1, 4]))
    assert part.indptr.tolist() == [0, *np.cumsum(np.diff(vectors.indptr)[[4, 1, 4]])]
    fourth = vectors.ngrams[vectors.indptr[4] : vectors.indptr[5]]
    np.testing.assert_array_equal(part.ngrams[: part.indptr[1]], fourth)
    np.testing.assert_array_equal(part.norms, vectors.norms[[4, 1, 4]])


@pytest.mark.parametrize(
    ("captions", "images", "message"),
    [
        ([1000, 5], [100, 100], "no CIDEr-D vector for caption_id 5"),
        ([1000, 1001], [100, 7], "no CIDEr-D vector for image_id 7"),
    ],
)
def test_unknown_ids_are_named(corpus, captions, images, message) -> None:
    refs, caption_ids, image_ids = corpus
    store = _references(refs, caption_ids, image_ids, cider_doc_freq(refs))
    with pytest.raises(ValueError, match=message):
        store.batch(np.array(captions), np.array(images))


def test_inconsistent_batch_is_an_error(corpus) -> None:
    refs, _, _ = corpus
    vectors = CiderVectors.from_texts(refs[0], cider_doc_freq(refs))
    with pytest.raises(ValueError, match="image rows for"):
        cider_batch_matrix(CiderBatch(vectors, vectors, np.array([len(vectors)]), np.zeros(1, dtype=int)))
    with pytest.raises(ValueError, match="CiderReferences: 2 vectors"):
        CiderReferences(vectors.take(np.array([0, 0])), np.arange(3), np.zeros(3))
