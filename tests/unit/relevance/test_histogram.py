"""Batch relevance histogram (ladder Fig. 6) against numpy.histogram."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vse_ray.relevance.histogram import RelevanceHistogram


def test_counts_match_numpy_histogram_with_edge_clipping():
    hist = RelevanceHistogram("cider", bins=20)
    batches = [torch.rand(8, 8) * 12 - 1 for _ in range(3)]
    for b in batches:
        hist.add(b)
    values = np.clip(torch.cat([b.flatten() for b in batches]).numpy(), 0, 10)
    expected, _ = np.histogram(values, bins=20, range=(0, 10))
    assert hist.counts.tolist() == expected.tolist()
    back = RelevanceHistogram.from_dict(hist.to_dict())
    assert back.counts.tolist() == expected.tolist() and np.allclose(back.edges, np.linspace(0, 10, 21))


def test_unknown_source():
    with pytest.raises(ValueError, match="source"):
        RelevanceHistogram("spice")
