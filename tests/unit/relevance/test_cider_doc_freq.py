import json
import math

import numpy as np
import pytest
from pycocoevalcap.cider.cider_scorer import CiderScorer

from vse_ray.relevance import CiderDocFreq, cider_doc_freq

from ._inputs import EDGE_CAPTIONS, make_reference_sets


def test_doc_freq_equals_pycocoevalcap_compute_doc_freq() -> None:
    refs = make_reference_sets(10, seed=4)
    refs[2] = refs[2] + EDGE_CAPTIONS
    scorer = CiderScorer()
    for ref_set in refs:
        scorer += ("unused", ref_set)
    scorer.compute_doc_freq()
    expected = {" ".join(gram): freq for gram, freq in scorer.document_frequency.items()}

    got = cider_doc_freq(refs)
    assert got.doc_freq == expected
    assert got.log_num_docs == pytest.approx(np.log(float(len(refs))), abs=0)


def test_doc_freq_counts_an_image_once_however_many_captions_repeat_the_ngram() -> None:
    got = cider_doc_freq([["a dog", "a dog runs", "a a"], ["a cat"]])
    assert got.doc_freq["a"] == 2
    assert got.doc_freq["a dog"] == 1
    assert got.doc_freq["a a"] == 1
    assert got.log_num_docs == math.log(2)


def test_json_round_trip() -> None:
    doc_freq = cider_doc_freq(make_reference_sets(5, seed=5))
    restored = CiderDocFreq.from_dict(json.loads(json.dumps(doc_freq.to_dict())))
    assert restored == doc_freq


def test_lookup_gives_zero_for_unseen_ngrams() -> None:
    doc_freq = cider_doc_freq([["a dog"], ["a cat"]])
    np.testing.assert_array_equal(doc_freq.lookup(["a", "a dog", "zebra"]), [2.0, 1.0, 0.0])


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"doc_freq": {}}, "missing the key 'log_num_docs'"),
        ({"log_num_docs": 0.0}, "missing the key 'doc_freq'"),
        ({"log_num_docs": -1.0, "doc_freq": {}}, "log_num_docs must be finite"),
        ({"log_num_docs": math.log(2), "doc_freq": {"a dog": 3}}, r"doc_freq\['a dog'\] = 3"),
    ],
)
def test_from_dict_rejects_bad_data(data, message) -> None:
    with pytest.raises(ValueError, match=message):
        CiderDocFreq.from_dict(data)


def test_empty_references_raise() -> None:
    with pytest.raises(ValueError, match="references is empty"):
        cider_doc_freq([])
