"""pycocoevalcap's CIDEr-D of every (hypothesis, image) pair: what the CIDEr kernels are tested against."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from pycocoevalcap.cider.cider import Cider
from pycocoevalcap.cider.cider_scorer import CiderScorer


class _FixedDocFreqScorer(CiderScorer):
    """CiderScorer with external document frequencies (``compute_cider`` would reset ``ref_len``)."""

    ref_len = property(lambda self: self._log_num_docs, lambda self, value: None)

    def __init__(self, doc_freq: dict[str, float], log_num_docs: float) -> None:
        super().__init__()
        self._log_num_docs = log_num_docs
        self.document_frequency = defaultdict(float, {tuple(g.split()): f for g, f in doc_freq.items()})


def reference_all_pairs(hyps, refs, doc_freq=None) -> np.ndarray:
    """Every (hypothesis, image) pair through pycocoevalcap, one hypothesis per image per call."""
    expected = np.full((len(hyps), len(refs)), np.nan)
    image_ids = np.arange(len(refs))
    for shift in range(len(hyps)):
        assign = (image_ids + shift) % len(hyps)
        if doc_freq is None:
            gts = {i: refs[i] for i in image_ids}
            res = {i: [hyps[assign[i]]] for i in image_ids}
            _, scores = Cider().compute_score(gts, res)
        else:
            scorer = _FixedDocFreqScorer(doc_freq.doc_freq, doc_freq.log_num_docs)
            for i in image_ids:
                scorer += (hyps[assign[i]], refs[i])
            scores = scorer.compute_cider()
        expected[assign, image_ids] = scores
    return expected
