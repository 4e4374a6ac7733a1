import pytest
import torch

from tests.unit.losses._reference import (
    DTYPES,
    kendall_full_ref,
    kendall_sw_ref,
    relevance_batch,
    unit_batch,
    vse0_ref,
)
from vse_ray.losses.kendall import kendall_full, kendall_pair_terms, kendall_sliding_window
from vse_ray.losses.samplers import SlidingWindowSampler


def stacked(img, txt, rel):
    sims = img @ txt.T
    return torch.stack((sims, sims.T)), torch.stack((rel, rel.T))


@pytest.mark.parametrize("dtype", DTYPES)
def test_full_matches_triple_loop(dtype):
    img, txt = unit_batch(5, 4, dtype)
    rel = relevance_batch(5, dtype)
    sims, rels = stacked(img, txt, rel)
    value = kendall_full(sims, rels, 0.2).sum()
    assert abs(float(value.detach()) - kendall_full_ref(img @ txt.T, rel, 0.2)) < 1e-5
    value.backward()
    assert torch.isfinite(img.grad).all()


def test_eq11_diagonal_terms_equal_the_triplet_with_zero_margin():
    img, txt = unit_batch(6, 3, torch.float64, seed=2)
    rel = relevance_batch(6, torch.float64)
    sims, rels = stacked(img, txt, rel)
    terms = kendall_pair_terms(sims, rels, alpha=0.0)
    diagonal_j = terms.diagonal(dim1=-3, dim2=-2).sum()  # j = i (the positive) in every query
    assert abs(float(diagonal_j.detach()) - vse0_ref(img @ txt.T, 0.0)) < 1e-12


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("alpha", "beta"), [(0.2, 0.1), (0.4, 0.2)])
def test_sliding_window_matches_loops(dtype, alpha, beta):
    img, txt = unit_batch(6, 4, dtype, seed=3)
    rel = relevance_batch(6, dtype, seed=4) * 1.6 - 0.6
    rel.fill_diagonal_(1.0)
    sims, rels = stacked(img, txt, rel)
    value = kendall_sliding_window(sims, rels, SlidingWindowSampler(alpha, beta)).sum()
    assert abs(float(value.detach()) - kendall_sw_ref(img @ txt.T, rel, alpha, beta)) < 1e-5
    value.backward()
    assert torch.isfinite(txt.grad).all()


def test_zero_when_similarities_follow_relevance():
    rel = torch.tensor([[1.0, 0.5, -0.5], [0.5, 1.0, 0.0], [-0.5, 0.0, 1.0]], dtype=torch.float64)
    sims = torch.stack((rel, rel.T))
    assert float(kendall_full(sims, sims, 0.2).sum()) == 0.0
    assert float(kendall_sliding_window(sims, sims, SlidingWindowSampler(0.2, 0.1)).sum()) == 0.0
