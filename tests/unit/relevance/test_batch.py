import numpy as np
import pytest
import torch

from vse_ray.relevance import CiderBatch, CiderVectors, batch_relevance, cider_doc_freq, cider_matrix

from ._inputs import make_captions, make_reference_sets


def _cosine_loop(vectors: torch.Tensor) -> torch.Tensor:
    out = torch.empty(len(vectors), len(vectors), dtype=vectors.dtype)
    for i, a in enumerate(vectors):
        for j, b in enumerate(vectors):
            out[i, j] = torch.dot(a, b) / (a.norm() * b.norm())
    return out


@pytest.mark.parametrize("source", ["sbert", "svd"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cosine_sources_equal_explicit_loop(source: str, dtype: torch.dtype) -> None:
    vectors = torch.randn(6, 5, dtype=dtype)
    got = batch_relevance(source, vectors)
    assert got.shape == (6, 6) and got.dtype == dtype
    torch.testing.assert_close(got, _cosine_loop(vectors))
    torch.testing.assert_close(got.diagonal(), torch.ones(6, dtype=dtype))


def test_cider_equals_cider_matrix_transposed() -> None:
    refs = make_reference_sets(5, seed=7)
    texts = [ref_set[0] for ref_set in refs[1:]] + make_captions(1, seed=8)
    doc_freq = cider_doc_freq(make_reference_sets(12, seed=9))
    cider = CiderBatch(
        hypotheses=CiderVectors.from_texts(texts, doc_freq),
        references=CiderVectors.from_texts([r for ref_set in refs for r in ref_set], doc_freq),
        set_sizes=np.array([len(ref_set) for ref_set in refs]),
        image_set=np.arange(5),
    )
    got = batch_relevance("cider", cider)
    expected = cider_matrix(texts, refs, doc_freq).T
    assert got.shape == (5, 5) and got.dtype == torch.float64
    np.testing.assert_allclose(got.numpy(), expected, rtol=0, atol=1e-12)
    assert got[1, 0] > got[0, 0]  # texts[0] is a reference of image 1: rows are images


@pytest.mark.parametrize(
    ("source", "inputs", "message"),
    [
        ("spice", None, "unknown relevance source 'spice'"),
        ("sbert", None, r"needs \(B, d\) caption vectors"),
        ("svd", torch.randn(4), r"svd must have shape \(B, d\)"),
        ("cider", None, "needs a CiderBatch"),
    ],
)
def test_bad_arguments_raise_value_error(source, inputs, message) -> None:
    with pytest.raises(ValueError, match=message):
        batch_relevance(source, inputs)
