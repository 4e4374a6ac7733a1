"""The compiled per-level hard-contrastive picks (CPU) against the torch path (other devices), run on CPU
tensors: the same picks, invalid ones included (tolerance: none)."""

import pytest
import torch

from vse_ray.losses.kernels.backend import row_kernel_backend
from vse_ray.losses.samplers import HardContrastivePairSampler


def ref_per_level(scores, levels, n_levels):
    """The torch path (the one other devices take), run on the CPU tensors."""
    with row_kernel_backend("torch"):
        return HardContrastivePairSampler().per_level(scores, levels, n_levels)


def random_case(lead, n, n_levels, seed, dtype, decimals=None):
    gen = torch.Generator().manual_seed(seed)
    scores = torch.randn(*lead, n, n, generator=gen, dtype=torch.float64)
    if decimals is not None:
        scores = scores.round(decimals=decimals)  # many ties
    levels = torch.randint(0, n_levels + 1, (*lead, n, n), generator=gen)
    levels[torch.rand(levels.shape, generator=gen) < 0.5] = n_levels  # some levels empty in many rows
    levels.diagonal(dim1=-2, dim2=-1).zero_()
    levels[..., 1, :] = 0  # a query without negatives
    levels[..., 2, :] = levels[..., 2, :].clamp(max=1)  # a query with one level
    return scores.to(dtype), levels


def assert_same(got, ref):
    for g, r in zip(got, ref, strict=True):
        assert g.columns.shape == r.columns.shape
        assert torch.equal(g.valid, r.valid) and torch.equal(g.columns, r.columns)  # invalid picks too


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("decimals", [None, 1, 0])
@pytest.mark.parametrize("n_levels", [1, 2, 3, 5])
def test_per_level_equals_the_torch_path(dtype, decimals, n_levels):
    for seed, (lead, n) in enumerate([((2,), 9), ((), 33), ((3, 2), 5), ((2,), 128)]):
        scores, levels = random_case(lead, n, n_levels, seed, dtype, decimals)
        got = HardContrastivePairSampler().per_level(scores, levels, n_levels)
        assert_same(got, ref_per_level(scores, levels, n_levels))


def test_per_level_ties_go_to_the_first_column_and_the_lower_level():
    scores = torch.tensor([[0.0, 0.5, 0.5, 0.2, 0.5, 0.2]], dtype=torch.float64).expand(6, 6).contiguous()
    levels = torch.tensor([[0, 1, 2, 1, 2, 2]]).expand(6, 6).contiguous()
    upper, lower = HardContrastivePairSampler().per_level(scores, levels, 2)
    assert lower.columns[0].tolist() == [1, 2]  # level 1 and level 2 both reach 0.5: level 1's column 1
    assert upper.columns[0].tolist() == [0, 3]  # furthest of level 1: 0.2 at column 3
    assert_same((upper, lower), ref_per_level(scores, levels, 2))


def test_per_level_treats_nan_and_infinite_scores_like_torch():
    """torch's 0 / -inf penalties give NaN outside a level for a NaN or +inf score (-inf: furthest)."""
    scores, levels = random_case((2,), 8, 3, seed=7, dtype=torch.float32)
    scores[0, 3, 4], scores[1, 5, levels[1, 5].argmax()] = float("nan"), float("nan")
    scores[0, 4, 2], scores[0, 6, 5], scores[1, 0, 3] = float("inf"), float("-inf"), float("inf")
    scores[1, 4, 4], levels[1, 4, 4] = float("-inf"), 3
    levels[0, 3, 4] = 2
    got = HardContrastivePairSampler().per_level(scores, levels, 3)
    assert_same(got, ref_per_level(scores, levels, 3))
    assert got[1].columns[0, 3, 1] == 4


def test_per_level_keeps_gradients_and_half_precision():
    scores, levels = random_case((2,), 7, 3, seed=3, dtype=torch.float16)
    upper, lower = HardContrastivePairSampler().per_level(scores, levels, 3)
    assert_same((upper, lower), ref_per_level(scores.float(), levels, 3))
    sims = scores.double().requires_grad_()
    (upper.gather(sims) - lower.gather(sims)).sum().backward()
    assert sims.grad is not None and torch.isfinite(sims.grad).all()


@pytest.mark.parametrize("backend", ["compiled", "torch"])
@pytest.mark.parametrize("bad", [-1, 4])
def test_per_level_rejects_levels_out_of_range(bad, backend):
    scores, levels = random_case((), 6, 3, seed=0, dtype=torch.float64)
    levels[2, 4] = bad
    with row_kernel_backend(backend), pytest.raises(ValueError, match="levels"):
        HardContrastivePairSampler().per_level(scores, levels, 3)
