"""cider_matrix against pycocoevalcap's Cider / CiderScorer on every (hypothesis, image) pair."""

from __future__ import annotations

import numpy as np
import pytest
from pycocoevalcap.cider.cider import Cider

import vse_ray.relevance.cider as cider_module
from vse_ray.relevance import cider_doc_freq, cider_matrix

from ._inputs import EDGE_CAPTIONS, make_captions, make_reference_sets
from ._pycoco import reference_all_pairs


@pytest.fixture(scope="module")
def problem() -> tuple[list[str], list[list[str]]]:
    refs = make_reference_sets(8, seed=1)
    refs[3] = refs[3] + EDGE_CAPTIONS[1:3]
    hyps = make_captions(16, seed=2) + EDGE_CAPTIONS + [refs[0][0], refs[5][0]]
    return hyps, refs


def test_cider_matrix_equals_pycocoevalcap_for_every_pair(problem) -> None:
    hyps, refs = problem
    expected = reference_all_pairs(hyps, refs)
    got = cider_matrix(hyps, refs)
    assert got.shape == (len(hyps), len(refs))
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    assert got.max() > 1.0  # the hypotheses copied from references score high: the test is not all zeros


def test_cider_matrix_equals_pycocoevalcap_random_assignment(problem) -> None:
    hyps, refs = problem
    assign = np.random.default_rng(0).integers(0, len(hyps), size=len(refs))
    _, scores = Cider().compute_score(
        {i: refs[i] for i in range(len(refs))}, {i: [hyps[j]] for i, j in enumerate(assign)}
    )
    np.testing.assert_allclose(cider_matrix(hyps, refs)[assign, np.arange(len(refs))], scores, atol=1e-9)


def test_cider_matrix_with_external_doc_freq_equals_scorer_with_overridden_idf(problem) -> None:
    hyps, refs = problem
    corpus = make_reference_sets(20, seed=3) + refs  # doc freqs counted over a larger image set
    doc_freq = cider_doc_freq(corpus)
    expected = reference_all_pairs(hyps, refs, doc_freq)
    got = cider_matrix(hyps, refs, doc_freq)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    assert not np.allclose(got, cider_matrix(hyps, refs))  # the external frequencies matter


@pytest.mark.parametrize("chunk_size", [1, 3, 7, 10_000])
def test_chunked_result_equals_single_block(problem, chunk_size: int) -> None:
    hyps, refs = problem
    np.testing.assert_allclose(
        cider_matrix(hyps, refs, chunk_size=chunk_size),
        cider_matrix(hyps, refs, chunk_size=len(hyps)),
        atol=1e-12,
    )


@pytest.mark.parametrize("share", [-1.0, 2.0])
def test_all_dense_and_all_sparse_products_agree(problem, monkeypatch, share: float) -> None:
    hyps, refs = problem
    expected = cider_matrix(hyps, refs)
    monkeypatch.setattr(cider_module, "_DENSE_PAIR_SHARE", share)
    np.testing.assert_allclose(cider_matrix(hyps, refs), expected, atol=1e-12)


def test_empty_inputs_give_empty_matrices() -> None:
    assert cider_matrix([], [["a dog"]]).shape == (0, 1)
    assert cider_matrix(["a dog"], []).shape == (1, 0)


@pytest.mark.parametrize(
    ("hyps", "refs", "kwargs", "message"),
    [
        (["a dog"], [[]], {}, r"references\[0\] is empty"),
        (["a dog"], ["a dog"], {}, r"references\[0\] must be a sequence of captions"),
        (["a dog", 3], [["a dog"]], {}, r"hypotheses\[1\] must be a str"),
        (["a dog"], [["a cat", None]], {}, r"references\[0\]\[1\] must be a str"),
        (["a dog"], [["a dog"]], {"chunk_size": 0}, "chunk_size must be >= 1"),
    ],
)
def test_bad_input_raises_value_error_naming_it(hyps, refs, kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        cider_matrix(hyps, refs, **kwargs)
