import pytest
import torch

from vse_ray.losses.samplers import (
    FurthestSampler,
    HardContrastivePairSampler,
    HardestSampler,
    RandomSampler,
    Selection,
    masked_logsumexp,
    soft_hardest_similarity,
)

SCORES = torch.tensor(
    [[0.9, 0.1, 0.5, -0.2], [0.3, 0.8, 0.7, 0.6], [0.0, 0.0, 0.0, 0.0]], dtype=torch.float64
)
CANDS = torch.tensor([[False, True, True, True], [True, False, True, True], [False, False, False, False]])


def test_hardest_and_furthest_pick_extremes_among_candidates():
    hard = HardestSampler()(SCORES, CANDS)
    far = FurthestSampler()(SCORES, CANDS)
    assert hard.columns[:2, 0].tolist() == [2, 2]
    assert far.columns[:2, 0].tolist() == [3, 0]
    assert hard.valid[:, 0].tolist() == [True, True, False] == far.valid[:, 0].tolist()


def test_selection_gather_keeps_gradients():
    scores = SCORES.clone().requires_grad_()
    pick = HardestSampler()(scores, CANDS)
    (pick.gather(scores) * pick.valid).sum().backward()
    expected = torch.zeros_like(SCORES)
    expected[0, 2] = expected[1, 2] = 1
    torch.testing.assert_close(scores.grad, expected)


def test_random_sampler_picks_only_candidates_and_covers_them():
    gen = torch.Generator().manual_seed(0)
    picks = torch.stack([RandomSampler(gen)(SCORES, CANDS).columns[:2, 0] for _ in range(200)])
    assert set(picks[:, 0].tolist()) == {1, 2, 3}
    assert set(picks[:, 1].tolist()) == {0, 2, 3}


def test_hard_contrastive_pair():
    upper = torch.tensor([[False, True, True, False]] * 3)
    lower = torch.tensor([[False, False, False, True]] * 3)
    i_star, j_star = HardContrastivePairSampler()(SCORES, upper, lower)
    assert i_star.columns[:, 0].tolist() == [1, 2, 1] and j_star.columns[:, 0].tolist() == [3, 3, 3]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_masked_logsumexp_matches_torch_and_handles_empty_rows(dtype):
    values = SCORES.to(dtype).clone().requires_grad_()
    out, valid = masked_logsumexp(values, CANDS)
    for row in range(2):
        torch.testing.assert_close(out[row], values[row][CANDS[row]].logsumexp(0))
    assert valid.tolist() == [True, True, False] and float(out[2].detach()) == 0.0
    out.sum().backward()
    assert torch.isfinite(values.grad).all() and torch.all(values.grad[2] == 0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_masked_logsumexp_matches_torch_on_widely_spread_values(dtype):
    gen = torch.Generator().manual_seed(0)
    values = (100 * torch.randn(8, 64, generator=gen, dtype=dtype)).requires_grad_()
    mask = torch.rand(8, 64, generator=gen) < 0.7
    out, _ = masked_logsumexp(values, mask)
    reference = values.masked_fill(~mask, float("-inf")).logsumexp(-1)
    torch.testing.assert_close(out, reference)
    (grad,) = torch.autograd.grad(out.sum(), values)
    torch.testing.assert_close(grad, torch.autograd.grad(reference.sum(), values)[0])


def test_soft_hardest_tends_to_the_max():
    value, _ = soft_hardest_similarity(SCORES, CANDS, gamma=1e4)
    torch.testing.assert_close(value[:2], torch.tensor([0.5, 0.7], dtype=torch.float64), atol=1e-3, rtol=0)


def test_contract_errors():
    with pytest.raises(ValueError, match="candidates"):
        HardestSampler()(SCORES, CANDS.float())
    with pytest.raises(ValueError, match="candidates"):
        HardestSampler()(SCORES, CANDS[:, :2])
    with pytest.raises(ValueError, match="scores"):
        HardestSampler()(torch.zeros(3), torch.zeros(3, dtype=torch.bool))

    class Broken(HardestSampler):
        def select(self, scores, candidates):
            return Selection(torch.zeros(scores.shape[0], dtype=torch.int64), candidates.any(-1))

    with pytest.raises(ValueError, match="shape"):
        Broken()(SCORES, CANDS)


@pytest.mark.parametrize("n_levels", [1, 2, 4])
def test_per_level_pairs_match_the_mask_based_sampler(n_levels):
    gen = torch.Generator().manual_seed(n_levels)
    scores = torch.randn(2, 7, 7, dtype=torch.float64, generator=gen).requires_grad_()
    levels = torch.randint(0, n_levels + 1, (2, 7, 7), generator=gen)
    levels.diagonal(dim1=-2, dim2=-1).zero_()
    levels[0, 3] = 0  # a query without negatives
    upper, lower = HardContrastivePairSampler().per_level(scores, levels, n_levels)
    for ell in range(1, n_levels + 1):
        up = torch.eye(7, dtype=torch.bool).expand(2, 7, 7) if ell == 1 else levels == ell - 1
        ref_up, ref_low = HardContrastivePairSampler()(scores, up.contiguous(), levels >= ell)
        assert torch.equal(upper.valid[..., ell - 1], ref_up.valid[..., 0])
        assert torch.equal(lower.valid[..., ell - 1], ref_low.valid[..., 0])
        for got, ref in ((upper, ref_up), (lower, ref_low)):
            ok = ref.valid[..., 0]
            assert torch.equal(got.columns[..., ell - 1][ok], ref.columns[..., 0][ok])
    upper.gather(scores).sum().backward()
    assert torch.isfinite(scores.grad).all()


def test_per_level_contract_errors():
    with pytest.raises(ValueError, match="levels"):
        HardContrastivePairSampler().per_level(SCORES, CANDS, 2)
    with pytest.raises(ValueError, match="n_levels"):
        HardContrastivePairSampler().per_level(SCORES, CANDS.long(), 0)
