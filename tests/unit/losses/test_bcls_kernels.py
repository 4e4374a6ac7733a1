"""The compiled BCLS pieces against the previous pure-torch implementation, kept here as the reference."""

import math

import numpy as np
import pytest
import torch

from vse_ray.losses import BCLSLoss
from vse_ray.losses.hinge import positive_sims
from vse_ray.losses.kendall import kendall_full, kendall_sliding_window
from vse_ray.losses.samplers import SlidingWindowSampler, masked_logsumexp, soft_hardest_similarity
from vse_ray.losses.samplers.base import Selection
from vse_ray.losses.samplers.sliding_window import EDGE_TOLERANCE

DTYPES = (torch.float32, torch.float64)
GRAD_RTOL = {torch.float32: 2e-6, torch.float64: 1e-13}  # of the largest gradient entry


# --- the previous implementation -------------------------------------------------------------------------


def reference_select(sampler: SlidingWindowSampler, scores, relevance) -> tuple[Selection, Selection]:
    """Sort by relevance, cummax / cummin of the sorted similarities, searchsorted window bounds."""
    lead, n_cols = scores.shape[:-1], scores.shape[-1]
    flat = relevance.reshape(-1, n_cols)
    order = torch.from_numpy(np.argsort(flat.numpy(), axis=-1))
    rel_sorted = flat.gather(-1, order)
    sims_sorted = scores.reshape(-1, n_cols).gather(-1, order)
    lo = sampler.lower_edges(rel_sorted.dtype, rel_sorted.device).expand(rel_sorted.shape[0], -1).contiguous()
    n_neg = torch.searchsorted(rel_sorted, lo - EDGE_TOLERANCE)
    first_pos = torch.searchsorted(rel_sorted, lo + sampler.alpha - EDGE_TOLERANCE)
    closest = torch.cummax(sims_sorted, -1).indices.gather(-1, (n_neg - 1).clamp(min=0))
    suffix_min = torch.cummin(sims_sorted.flip(-1), -1).indices
    furthest = n_cols - 1 - suffix_min.gather(-1, (n_cols - 1 - first_pos).clamp(min=0))
    valid = (n_neg > 0) & (first_pos < n_cols)
    shape = (*lead, sampler.n_windows)
    pos = Selection(order.gather(-1, furthest).view(shape), valid.view(shape))
    neg = Selection(order.gather(-1, closest).view(shape), valid.view(shape))
    return pos, neg


def reference_masked_logsumexp(values, mask):
    weight = mask.to(values.dtype)
    with torch.no_grad():
        top = (values + (weight - 1) * torch.finfo(values.dtype).max).amax(-1, keepdim=True)
    floor = math.log(torch.finfo(values.dtype).tiny) / 2
    shifted = torch.where(mask, values - top, floor).clamp(min=floor)
    total = (shifted.exp() * weight).sum(-1)
    valid = total > 0
    result = top.squeeze(-1) + torch.where(valid, total, 1.0).log()
    return torch.where(valid, result, 0.0), valid


def reference_soft_hardest(scores, candidates, gamma):
    value, valid = reference_masked_logsumexp(gamma * scores, candidates)
    return value / gamma, valid


def reference_kendall_sliding_window(sims, relevance, sampler):
    pos, neg = reference_select(sampler, sims.detach(), relevance)
    hinge = (neg.gather(sims) - pos.gather(sims)).clamp(min=0) * pos.valid
    return hinge.sum(-1) / sampler.n_windows


class ReferenceBCLS(BCLSLoss):
    def query_loss(self, sims, relevance, candidates):
        relevance = relevance.diagonal_scatter(
            torch.ones_like(relevance.diagonal(dim1=-2, dim2=-1)), 0, -2, -1
        )
        negatives = candidates & (relevance < 1.0 - EDGE_TOLERANCE)
        soft_max, valid = reference_soft_hardest(sims, negatives, self.gamma)
        triplet = (soft_max - positive_sims(sims) + self.margin).clamp(min=0) * valid
        if self.kendall == "full":
            return triplet + kendall_full(sims, relevance, self.alpha)
        return triplet + reference_kendall_sliding_window(sims, relevance, self.sampler)


# --- inputs ----------------------------------------------------------------------------------------------


def scores_and_relevance(kind: str, shape: tuple[int, ...], dtype: torch.dtype, seed: int):
    """Random (scores, relevance in [-1, 1]); ``kind`` adds ties, NaN scores or symmetric relevance."""
    gen = torch.Generator().manual_seed(seed)
    scores = torch.rand(shape, generator=gen, dtype=dtype) * 2 - 1
    relevance = torch.rand(shape, generator=gen, dtype=dtype) * 2 - 1
    if kind in ("ties", "relevance_ties"):  # equal relevances, also on window edges
        relevance = (relevance * 5).round() / 5
    if kind == "ties":  # and equal scores
        scores = (scores * 4).round() / 4
    elif kind == "nan":
        scores = scores.masked_fill(torch.rand(shape, generator=gen) < 0.1, float("nan"))
    elif kind == "symmetric":  # both directions of a symmetric relevance: equal slices share one sort
        base = relevance.reshape(-1, *shape[-2:])[0]
        base = (base + base.T) / 2 if shape[-1] == shape[-2] else base
        relevance = base.expand(2, *shape[-2:]).contiguous()
        scores = torch.rand(2, *shape[-2:], generator=gen, dtype=dtype) * 2 - 1
    return scores, relevance


def assert_grads_close(actual, expected, dtype):
    scale = expected.abs().max().clamp(min=torch.finfo(dtype).tiny)
    assert float((actual - expected).abs().max() / scale) <= GRAD_RTOL[dtype]


# --- sliding-window sampler ------------------------------------------------------------------------------


def assert_same_picks(sampler, scores, relevance, exact: str) -> None:
    """Equal validity and picked scores; equal indices on ``exact`` = "all" windows, the "valid" ones or
    "none" (equal relevances may be ordered apart, which moves the picks of tied scores and of empty sets)."""
    pairs = zip(sampler(scores, relevance), reference_select(sampler, scores, relevance), strict=True)
    for picked, expected in pairs:
        assert torch.equal(picked.valid, expected.valid)
        valid = expected.valid
        picked_scores, expected_scores = picked.gather(scores)[valid], expected.gather(scores)[valid]
        torch.testing.assert_close(picked_scores, expected_scores, rtol=0, atol=0, equal_nan=True)
        if exact != "none":
            keep = torch.ones_like(valid) if exact == "all" else valid
            assert torch.equal(picked.index[keep], expected.index[keep])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["plain", "relevance_ties", "ties", "nan", "symmetric"])
@pytest.mark.parametrize(("alpha", "beta"), [(0.2, 0.1), (0.5, 0.25), (1.3, 0.05), (1.99, 100.0)])
def test_sampler_picks_equal_reference(dtype, kind, alpha, beta):
    """Exactly the previous Selections; with equal relevances (float32 sorts them by column, numpy's argsort
    in any order) the picked scores are equal, and so are the indices of valid windows unless scores tie."""
    exact = {"relevance_ties": "valid", "ties": "none"}.get(kind, "all") if dtype == torch.float32 else "all"
    for seed, shape in enumerate([(2, 9, 9), (3, 1, 1), (2, 2, 2), (2, 16, 16), (5, 7)]):
        scores, relevance = scores_and_relevance(kind, shape, dtype, seed)
        assert_same_picks(SlidingWindowSampler(alpha, beta), scores, relevance, exact)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fill", [1.0, -1.0, 0.0])
def test_sampler_empty_windows_equal_reference(dtype, fill):
    """All relevances equal: every window lacks negatives or positives (or both)."""
    scores, _ = scores_and_relevance("plain", (2, 6, 6), dtype, 3)
    relevance = torch.full_like(scores, fill)
    sampler = SlidingWindowSampler(0.2, 0.1)
    assert_same_picks(sampler, scores, relevance, "all" if dtype == torch.float64 else "valid")
    assert not sampler(scores, relevance)[0].valid.any()


def test_equal_relevances_keep_column_order():
    """float32 relevance ties: among equal scores the closest negative is the last column, the furthest
    positive the first."""
    scores = torch.tensor([[0.5, 0.5, 0.5, 0.9]])
    relevance = torch.tensor([[-0.9, -0.9, 0.9, 0.9]])
    furthest, closest = SlidingWindowSampler(0.2, 0.1)(scores, relevance)
    assert closest.index[0, -1] == 1 and furthest.index[0, 0] == 2


def test_bounds_share_the_sort_of_equal_slices():
    scores, relevance = scores_and_relevance("symmetric", (5, 5), torch.float32, 0)
    sampler = SlidingWindowSampler(0.2, 0.1)
    assert sampler.bounds(relevance)[0].shape == (5, 5)
    relevance[1, 2, 3] += 0.5  # only the changed row is sorted again
    order, _, row_of = sampler.bounds(relevance)
    assert order.shape == (6, 5) and row_of.tolist() == [0, 1, 2, 3, 4, 0, 1, 5, 3, 4]


# --- soft maximum ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("spread", [1.0, 100.0, 1e4])
@pytest.mark.parametrize("gamma", [None, 1.0, 50.0])
def test_soft_maximum_equals_reference_bitwise(dtype, spread, gamma):
    gen = torch.Generator().manual_seed(int(spread))
    values = torch.randn(3, 9, 21, generator=gen, dtype=dtype) * spread
    mask = torch.rand(3, 9, 21, generator=gen) < 0.6
    mask[0, 0] = False  # a row without candidates
    mask[1, 1] = False
    mask[1, 1, 4] = True  # a single candidate
    upstream = torch.randn(3, 9, generator=gen, dtype=dtype)
    results = []
    for fn in (
        (masked_logsumexp, reference_masked_logsumexp)
        if gamma is None
        else (
            lambda v, m: soft_hardest_similarity(v, m, gamma),
            lambda v, m: reference_soft_hardest(v, m, gamma),
        )
    ):
        leaf = values.clone().requires_grad_()
        value, valid = fn(leaf, mask)
        (grad,) = torch.autograd.grad((value * upstream).sum(), leaf)
        results.append((value.detach(), valid, grad))
    for actual, expected in zip(*results, strict=True):
        assert torch.equal(actual, expected)
    assert not results[0][1][0, 0] and results[0][0][0, 0] == 0 and not results[0][2][0, 0].any()


def test_soft_maximum_nan_and_huge_entries_equal_reference():
    """A NaN anywhere in a row voids it and an infinite masked-out value enters the maximum, as before."""
    values = torch.tensor(
        [[0.5, float("nan"), 0.1], [0.3, float("nan"), 0.2], [1.0, float("inf"), 2.0], [-0.0, 0.0, -0.0]]
    )
    mask = torch.tensor([[True, True, False], [True, False, True], [True, False, True], [True, False, True]])
    value, valid = masked_logsumexp(values, mask)
    expected, expected_valid = reference_masked_logsumexp(values, mask)
    assert torch.equal(value, expected) and torch.equal(valid, expected_valid)
    assert valid.tolist() == [False, False, True, True]


@pytest.mark.parametrize("gamma", [1.0, 7.0])
def test_soft_maximum_gradcheck(gamma):
    gen = torch.Generator().manual_seed(5)
    values = torch.randn(2, 4, 6, generator=gen, dtype=torch.float64).requires_grad_()
    mask = torch.rand(2, 4, 6, generator=gen) < 0.7
    mask[0, 0] = False
    assert torch.autograd.gradcheck(lambda v: soft_hardest_similarity(v, mask, gamma)[0], (values,))
    assert torch.autograd.gradcheck(lambda v: masked_logsumexp(v, mask)[0], (values,))


# --- Kendall sliding window ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["plain", "relevance_ties", "symmetric"])
def test_kendall_sliding_window_equals_reference(dtype, kind):
    scores, relevance = scores_and_relevance(kind, (2, 12, 12), dtype, 7)
    sampler = SlidingWindowSampler(0.3, 0.1)
    upstream = torch.randn(scores.shape[:-1], generator=torch.Generator().manual_seed(1), dtype=dtype)
    results = []
    for fn in (kendall_sliding_window, reference_kendall_sliding_window):
        leaf = scores.clone().requires_grad_()
        value = fn(leaf, relevance, sampler)
        results.append((value.detach(), *torch.autograd.grad((value * upstream).sum(), leaf)))
    (value, grad), (expected, expected_grad) = results
    assert torch.equal(value, expected) and value.gt(0).any()
    assert_grads_close(grad, expected_grad, dtype)


def test_kendall_sliding_window_gradcheck():
    scores, relevance = scores_and_relevance("plain", (2, 7, 7), torch.float64, 2)
    sampler = SlidingWindowSampler(0.2, 0.1)
    leaf = scores.requires_grad_()
    assert torch.autograd.gradcheck(lambda s: kendall_sliding_window(s, relevance, sampler), (leaf,))


# --- the whole loss --------------------------------------------------------------------------------------


def loss_batch(batch: int, dtype: torch.dtype, seed: int, ties: bool, symmetric: bool):
    gen = torch.Generator().manual_seed(seed)
    img = torch.nn.functional.normalize(torch.randn(batch, 8, generator=gen, dtype=dtype), dim=1)
    txt = torch.nn.functional.normalize(img + torch.randn(batch, 8, generator=gen, dtype=dtype), dim=1)
    rel = torch.rand(batch, batch, generator=gen, dtype=dtype) * 2 - 1
    if ties:
        rel = (rel * 4).round() / 4
    if symmetric:
        rel = (rel + rel.T) / 2
    return img, txt, rel


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("ties", "symmetric", "ids"), [(False, False, False), (True, True, False), (True, False, True)]
)
@pytest.mark.parametrize(
    "hparams",
    [
        {},
        {"gamma": 1e3, "alpha": 0.5, "beta": 0.05, "margin": 0.0},
        {"gamma": 5.0, "alpha": 1.2, "beta": 0.3},
    ],
)
def test_bcls_equals_reference(dtype, ties, symmetric, ids, hparams):
    for seed, batch in enumerate([1, 2, 5, 17]):
        img, txt, rel = loss_batch(batch, dtype, seed, ties, symmetric)
        image_ids = torch.arange(batch) // 2 if ids else None
        upstream = torch.arange(1, batch + 1, dtype=dtype)
        results = []
        for cls in (BCLSLoss, ReferenceBCLS):
            leaves = img.clone().requires_grad_(), txt.clone().requires_grad_()
            loss = cls(reduction="none", **hparams)(*leaves, rel, image_ids)
            results.append((loss.detach(), torch.autograd.grad((loss * upstream).sum(), leaves)))
        (loss, grads), (expected, expected_grads) = results
        assert torch.equal(loss, expected)
        for grad, expected_grad in zip(grads, expected_grads, strict=True):
            assert_grads_close(grad, expected_grad, dtype)


def test_bcls_gradcheck():
    img, txt, rel = loss_batch(6, torch.float64, 3, ties=False, symmetric=True)
    loss = BCLSLoss(gamma=10.0, reduction="none")
    leaves = img.requires_grad_(), txt.requires_grad_()
    assert torch.autograd.gradcheck(lambda i, t: loss(i, t, rel), leaves)
