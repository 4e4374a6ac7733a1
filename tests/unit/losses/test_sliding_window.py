import pytest
import torch

from vse_ray.losses.samplers import HardContrastivePairSampler, SlidingWindowSampler


def window_masks(rel, alpha, beta):
    """Explicit window sets: Neg_m = {r < a_m}, Pos_m = {r >= a_m + alpha}, a_m = -1 + m beta (m = 1..M)."""
    n_windows = round((2 - alpha) / beta)
    lo = [-1 + m * beta for m in range(1, n_windows + 1)]
    pos = torch.stack([rel >= a + alpha - 1e-6 for a in lo])
    neg = torch.stack([rel < a - 1e-6 for a in lo])
    return pos, neg


@pytest.mark.parametrize("symmetric", [False, True])
@pytest.mark.parametrize(("alpha", "beta"), [(0.2, 0.1), (0.5, 0.25), (1.0, 0.3)])
def test_matches_explicit_window_masks(alpha, beta, symmetric):
    gen = torch.Generator().manual_seed(1)
    sims = torch.rand(2, 7, 7, generator=gen, dtype=torch.float64)
    rel = torch.rand(2, 7, 7, generator=gen, dtype=torch.float64) * 2 - 1
    rel[..., 3] = rel[..., 4]  # ties in relevance
    if symmetric:  # both directions equal: the sort is shared
        rel = ((rel[0] + rel[0].T) / 2).expand(2, -1, -1)
    sampler = SlidingWindowSampler(alpha, beta)
    pos, neg = sampler(sims, rel)
    up, low = window_masks(rel, alpha, beta)
    ref_pos, ref_neg = HardContrastivePairSampler()(sims.expand_as(up), up, low)
    assert sampler.n_windows == up.shape[0]
    torch.testing.assert_close(pos.valid, (ref_pos.valid & ref_neg.valid).squeeze(-1).movedim(0, -1))
    valid = pos.valid
    torch.testing.assert_close(
        pos.gather(sims)[valid], ref_pos.gather(sims).squeeze(-1).movedim(0, -1)[valid]
    )
    torch.testing.assert_close(
        neg.gather(sims)[valid], ref_neg.gather(sims).squeeze(-1).movedim(0, -1)[valid]
    )


def test_top_window_holds_the_positive_pair():
    rel = torch.tensor([[1.0, 0.75, -0.3]], dtype=torch.float32)
    sims = torch.tensor([[0.5, 0.9, 0.1]])
    pos, neg = SlidingWindowSampler(0.2, 0.1)(sims, rel)
    assert pos.columns[0, -1] == 0 and neg.columns[0, -1] == 1 and pos.valid[0, -1]


@pytest.mark.parametrize(
    ("alpha", "beta", "name"), [(0.0, 0.1, "alpha"), (2.0, 0.1, "alpha"), (0.2, 0.0, "beta")]
)
def test_bad_hyper_parameters(alpha, beta, name):
    with pytest.raises(ValueError, match=name):
        SlidingWindowSampler(alpha, beta)
