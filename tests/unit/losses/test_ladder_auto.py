import pytest
import torch

from tests.unit.losses._reference import (
    DTYPES,
    assert_close,
    assert_finite_grads,
    directions,
    hinge,
    relevance_batch,
    unit_batch,
)
from vse_ray.losses import AdaptiveLadderLoss, VSEPPLoss
from vse_ray.losses.kernels.clustering import adaptive_levels


def auto_ladder_ref(sims, rel, margins, betas, levels_i2t, levels_t2i):
    """Eq. 6-8 in loops, with the per-query levels given (level 0 = not a negative)."""
    total = 0.0
    for (S, _, negs), levels in zip(directions(sims, rel), (levels_i2t, levels_t2i), strict=True):
        for q in range(len(S)):
            for ell in range(1, int(levels[q].max()) + 1):
                upper = [q] if ell == 1 else [c for c in negs[q] if levels[q][c] == ell - 1]
                lower = [c for c in negs[q] if levels[q][c] >= ell]
                if upper and lower:
                    total += betas[ell - 1] * hinge(
                        margins[ell - 1] - min(S[q][i] for i in upper) + max(S[q][j] for j in lower)
                    )
    return total


@pytest.mark.parametrize("dtype", DTYPES)
def test_matches_loop_reference_given_levels(dtype):
    img, txt = unit_batch(6, 4, dtype)
    rel = relevance_batch(6, dtype, dim=2)
    loss = AdaptiveLadderLoss()(img, txt, rel)
    cand = ~torch.eye(6, dtype=torch.bool)
    levels_i2t, _ = adaptive_levels(rel, cand, 2, 4)
    levels_t2i, _ = adaptive_levels(rel.T, cand, 2, 4)
    margins, betas = (0.2, 0.01, 0.01, 0.01), (1.0, 0.25, 0.125, 0.0625)
    assert_close(loss, auto_ladder_ref(img @ txt.T, rel, margins, betas, levels_i2t, levels_t2i), dtype)
    assert_finite_grads(loss, img, txt)


@pytest.mark.parametrize("dtype", DTYPES)
def test_zero_upper_weights_give_vsepp(dtype):
    img, txt = unit_batch(6, 4, dtype, seed=1)
    rel = relevance_batch(6, dtype)
    loss = AdaptiveLadderLoss(betas=(1.0, 0.0, 0.0, 0.0))(img, txt, rel)
    torch.testing.assert_close(loss, VSEPPLoss()(img, txt))


def test_short_margins_and_betas_extend_to_the_paper_defaults():
    loss = AdaptiveLadderLoss(margins=(0.2, 0.01), betas=(1.0, 0.25), l_min=2, l_max=4)
    assert loss.margins.tolist() == [0.2, 0.01, 0.01, 0.01]
    assert loss.betas.tolist() == [1.0, 0.25, 0.125, 0.0625]


def test_batch_of_two_falls_back_to_the_triplet():
    img, txt = unit_batch(2, 3, torch.float64)
    rel = relevance_batch(2, torch.float64)
    torch.testing.assert_close(AdaptiveLadderLoss()(img, txt, rel), VSEPPLoss()(img, txt))


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"l_min": 1}, "l_min"),
        ({"l_min": 3, "l_max": 2}, "l_max"),
        ({"margins": (0.2,) * 5}, "margins"),
        ({"betas": ()}, "betas"),
        ({"margins": (0.2, -0.1)}, "margins"),
        ({"max_iter": 0}, "max_iter"),
    ],
)
def test_bad_hyper_parameters(kwargs, name):
    with pytest.raises(ValueError, match=name):
        AdaptiveLadderLoss(**kwargs)
