"""BCLS's two device paths - the compiled row loops (CPU tensors) and the torch expression (other devices,
run here on CPU tensors) - against each other and against explicit loops of the paper's equations.

Tolerances: picks are equal (indices too, unless equal relevances or scores make several picks right);
loss values agree to 1e-5 (float32) / 1e-12 (float64) relative; gradients to GRAD_RTOL of the largest
gradient entry.
"""

import math

import pytest
import torch

from tests.unit.losses._reference import kendall_sw_ref, triplet_sn_ref
from vse_ray.losses import BCLSLoss
from vse_ray.losses.kendall import kendall_sliding_window
from vse_ray.losses.kernels.backend import row_kernel_backend
from vse_ray.losses.samplers import SlidingWindowSampler, masked_logsumexp, soft_hardest_similarity

DTYPES = (torch.float32, torch.float64)
VALUE_RTOL = {torch.float32: 1e-5, torch.float64: 1e-12}
GRAD_RTOL = {torch.float32: 2e-6, torch.float64: 1e-12}  # of the largest gradient entry


def on_both_paths(fn):
    """fn() with the compiled loops and with the torch path."""
    results = []
    for backend in ("compiled", "torch"):
        with row_kernel_backend(backend):
            results.append(fn())
    return results


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


def assert_same_picks(sampler, scores, relevance, exact: bool) -> None:
    """Equal validity and picked scores on both paths; equal indices where ``exact`` (equal relevances may
    be sorted apart, which moves the picks among tied scores and of empty windows)."""
    compiled, torch_path = on_both_paths(lambda: sampler.pairs(scores, relevance))
    assert torch.equal(compiled.valid, torch_path.valid)
    valid = compiled.valid
    torch.testing.assert_close(
        compiled.gather(scores)[valid], torch_path.gather(scores)[valid], rtol=0, atol=0, equal_nan=True
    )
    if exact:
        assert torch.equal(compiled.columns, torch_path.columns)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["plain", "relevance_ties", "ties", "nan", "symmetric"])
@pytest.mark.parametrize(("alpha", "beta"), [(0.2, 0.1), (0.5, 0.25), (1.99, 100.0)])
def test_sampler_picks_equal_on_both_paths(dtype, kind, alpha, beta):
    """float32 sorts equal relevances by column on both paths; float64's numpy argsort does not."""
    exact = kind in ("plain", "nan", "symmetric") or (dtype == torch.float32 and kind == "relevance_ties")
    for seed, shape in enumerate([(2, 9, 9), (3, 1, 1), (2, 2, 2), (2, 16, 16), (5, 7)]):
        scores, relevance = scores_and_relevance(kind, shape, dtype, seed)
        assert_same_picks(SlidingWindowSampler(alpha, beta), scores, relevance, exact)


@pytest.mark.parametrize("fill", [1.0, -1.0, 0.0])
def test_sampler_empty_windows_on_both_paths(fill):
    """All relevances equal: every window lacks negatives or positives (or both)."""
    scores, _ = scores_and_relevance("plain", (2, 6, 6), torch.float32, 3)
    relevance = torch.full_like(scores, fill)
    sampler = SlidingWindowSampler(0.2, 0.1)
    assert_same_picks(sampler, scores, relevance, exact=True)
    assert not sampler(scores, relevance)[0].valid.any()


@pytest.mark.parametrize("backend", ["compiled", "torch"])
def test_equal_relevances_keep_column_order(backend):
    """float32 relevance ties: among equal scores the closest negative is the last column, the furthest
    positive the first."""
    scores = torch.tensor([[0.5, 0.5, 0.5, 0.9]])
    relevance = torch.tensor([[-0.9, -0.9, 0.9, 0.9]])
    with row_kernel_backend(backend):
        furthest, closest = SlidingWindowSampler(0.2, 0.1)(scores, relevance)
    assert closest.columns[0, -1] == 1 and furthest.columns[0, 0] == 2


def test_bounds_share_the_sort_of_equal_slices():
    scores, relevance = scores_and_relevance("symmetric", (5, 5), torch.float32, 0)
    sampler = SlidingWindowSampler(0.2, 0.1)
    assert sampler.bounds(relevance)[0].shape == (5, 5)
    relevance[1, 2, 3] += 0.5  # only the changed row is sorted again
    order, _, row_of = sampler.bounds(relevance)
    assert order.shape == (6, 5) and row_of.tolist() == [0, 1, 2, 3, 4, 0, 1, 5, 3, 4]


# --- soft maximum (plain torch on every device) ----------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("spread", "gamma"), [(1.0, None), (100.0, 1.0), (1.0, 50.0), (1e4, None)])
def test_soft_maximum_equals_loops(dtype, spread, gamma):
    """Value (1/γ) log Σ exp(γ v) and gradient = softmax weights, in loops (math.fsum); empty rows 0."""
    gen = torch.Generator().manual_seed(int(spread))
    values = torch.randn(3, 5, 11, generator=gen, dtype=dtype) * spread
    mask = torch.rand(3, 5, 11, generator=gen) < 0.6
    mask[0, 0] = False  # a row without candidates
    mask[1, 1] = False
    mask[1, 1, 4] = True  # a single candidate
    leaf = values.clone().requires_grad_()
    if gamma is None:
        value, valid = masked_logsumexp(leaf, mask)
    else:
        value, valid = soft_hardest_similarity(leaf, mask, gamma)
    (grad,) = torch.autograd.grad(value.sum(), leaf)
    g = 1.0 if gamma is None else gamma
    for index in torch.cartesian_prod(torch.arange(3), torch.arange(5)).tolist():
        row, keep = values[tuple(index)].double().tolist(), mask[tuple(index)].tolist()
        picked = [g * v for v, m in zip(row, keep, strict=True) if m]
        assert bool(valid[tuple(index)]) == bool(picked)
        if not picked:
            assert value[tuple(index)] == 0 and not grad[tuple(index)].any()
            continue
        top = max(picked)
        total = math.fsum(math.exp(p - top) for p in picked)
        expected = (top + math.log(total)) / g
        assert math.isclose(
            float(value[tuple(index)].detach()), expected, rel_tol=VALUE_RTOL[dtype], abs_tol=1e-30
        )
        weights = [math.exp(g * v - top) / total if m else 0.0 for v, m in zip(row, keep, strict=True)]
        torch.testing.assert_close(
            grad[tuple(index)].double(), torch.tensor(weights, dtype=torch.float64), rtol=0, atol=1e-6
        )


def test_soft_maximum_nan_and_huge_entries():
    """A NaN in a row voids it (NaN maximum: no valid sum); an infinite value, even outside the mask, enters
    the maximum (masked-out entries are lowered by finfo.max, not removed), so the result is infinite."""
    values = torch.tensor(
        [[0.5, float("nan"), 0.1], [0.3, float("nan"), 0.2], [1.0, float("inf"), 2.0], [-0.0, 0.0, -0.0]]
    )
    mask = torch.tensor([[True, True, False], [True, False, True], [True, False, True], [True, False, True]])
    value, valid = masked_logsumexp(values, mask)
    assert valid.tolist() == [False, False, True, True]
    assert value[2] == math.inf
    assert value[3] == pytest.approx(math.log(2.0))


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
def test_kendall_sliding_window_on_both_paths(dtype, kind):
    scores, relevance = scores_and_relevance(kind, (2, 12, 12), dtype, 7)
    sampler = SlidingWindowSampler(0.3, 0.1)
    upstream = torch.randn(scores.shape[:-1], generator=torch.Generator().manual_seed(1), dtype=dtype)

    def value_and_grad():
        leaf = scores.clone().requires_grad_()
        value = kendall_sliding_window(leaf, relevance, sampler)
        return value.detach(), *torch.autograd.grad((value * upstream).sum(), leaf)

    (value, grad), (expected, expected_grad) = on_both_paths(value_and_grad)
    torch.testing.assert_close(value, expected, rtol=VALUE_RTOL[dtype], atol=0)
    assert value.gt(0).any()
    assert_grads_close(grad, expected_grad, dtype)


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
def test_bcls_on_both_paths(dtype, ties, symmetric, ids, hparams):
    for seed, batch in enumerate([1, 2, 5, 17]):
        img, txt, rel = loss_batch(batch, dtype, seed, ties, symmetric)
        image_ids = torch.arange(batch) // 2 if ids else None
        upstream = torch.arange(1, batch + 1, dtype=dtype)

        def loss_and_grads(img=img, txt=txt, rel=rel, image_ids=image_ids, upstream=upstream):
            leaves = img.clone().requires_grad_(), txt.clone().requires_grad_()
            loss = BCLSLoss(reduction="none", **hparams)(*leaves, rel, image_ids)
            return loss.detach(), torch.autograd.grad((loss * upstream).sum(), leaves)

        (loss, grads), (expected, expected_grads) = on_both_paths(loss_and_grads)
        torch.testing.assert_close(loss, expected, rtol=VALUE_RTOL[dtype], atol=VALUE_RTOL[dtype])
        for grad, expected_grad in zip(grads, expected_grads, strict=True):
            assert_grads_close(grad, expected_grad, dtype)


@pytest.mark.parametrize("backend", ["compiled", "torch"])
@pytest.mark.parametrize(("alpha", "beta", "gamma"), [(0.2, 0.1, 50.0), (0.5, 0.25, 5.0)])
def test_bcls_equals_loops_with_image_ids(backend, alpha, beta, gamma):
    """Both paths against eq. 14-15 + eq. 19-20 in loops (captions of one image are no negatives)."""
    img, txt, rel = loss_batch(9, torch.float64, 4, ties=False, symmetric=False)
    image_ids = torch.tensor([0, 0, 1, 2, 2, 2, 3, 4, 5])
    with row_kernel_backend(backend):
        loss = BCLSLoss(gamma=gamma, alpha=alpha, beta=beta)(img, txt, rel, image_ids)
    sims, rel = img @ txt.T, rel.clone().fill_diagonal_(1.0)
    expected = triplet_sn_ref(sims, rel, 0.2, gamma, image_ids.tolist()) + kendall_sw_ref(
        sims, rel, alpha, beta
    )
    assert float(loss) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("backend", ["compiled", "torch"])
def test_bcls_gradcheck(backend):
    img, txt, rel = loss_batch(6, torch.float64, 3, ties=False, symmetric=True)
    loss = BCLSLoss(gamma=10.0, reduction="none")
    leaves = img.requires_grad_(), txt.requires_grad_()
    with row_kernel_backend(backend):
        assert torch.autograd.gradcheck(lambda i, t: loss(i, t, rel), leaves)
