import pytest
import torch

from tests.unit.losses._reference import (
    DTYPES,
    assert_close,
    assert_finite_grads,
    kendall_full_ref,
    kendall_sw_ref,
    relevance_batch,
    triplet_sn_ref,
    unit_batch,
    vsepp_ref,
)
from vse_ray.losses import BCLSLoss


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kendall", ["sw_hs", "full", "none"])
def test_matches_loop_reference(dtype, kendall):
    img, txt = unit_batch(6, 4, dtype)
    rel = relevance_batch(6, dtype) * 1.5 - 0.5
    loss = BCLSLoss(gamma=10.0, kendall=kendall)(img, txt, rel)
    rel = rel.clone().fill_diagonal_(1.0)
    sims = img @ txt.T
    ranks = {
        "sw_hs": kendall_sw_ref(sims, rel, 0.2, 0.1),
        "full": kendall_full_ref(sims, rel, 0.2),
        "none": 0,
    }
    rank = ranks[kendall]
    assert_close(loss, triplet_sn_ref(sims, rel, 0.2, 10.0) + rank, dtype)
    assert_finite_grads(loss, img, txt)


def test_triplet_sn_tends_to_the_hardest_negative_triplet():
    img, txt = unit_batch(6, 4, torch.float64, seed=1)
    rel = relevance_batch(6, torch.float64) * 0.5  # off-diagonal < 1: every other caption is a negative
    gaps = []
    for gamma in (10.0, 100.0, 1e4):
        total = BCLSLoss(gamma=gamma, alpha=1.99, beta=100.0)(img, txt, rel)
        kendall_part = kendall_sw_ref(img @ txt.T, rel.clone().fill_diagonal_(1.0), 1.99, 100.0)
        gaps.append(abs(float(total.detach()) - kendall_part - vsepp_ref(img @ txt.T, 0.2)))
    assert gaps[0] > gaps[1] > gaps[2] and gaps[2] < 1e-3


def test_relevance_one_is_not_a_negative():
    img, txt = unit_batch(4, 3, torch.float64, seed=2)
    rel = torch.full((4, 4), 1.0, dtype=torch.float64)
    loss = BCLSLoss(kendall="full")(img, txt, rel)
    assert float(loss.detach()) == 0.0  # no negatives (r < 1) and no discordant-allowed pairs


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": 2.5}, "alpha"),
        ({"gamma": 0.0}, "gamma"),
        ({"margin": -0.1}, "margin"),
        ({"kendall": "fast"}, "kendall"),
        ({"beta": -1.0}, "beta"),
    ],
)
def test_bad_hyper_parameters(kwargs, name):
    with pytest.raises(ValueError, match=name):
        BCLSLoss(**kwargs)
