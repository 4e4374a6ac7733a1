import numpy as np
import pytest
import torch

from tests.unit.losses._reference import (
    DTYPES,
    assert_close,
    assert_finite_grads,
    ladder_ref,
    relevance_batch,
    unit_batch,
    vse0_ref,
    vsepp_ref,
)
from vse_ray.losses import LadderLoss, VSE0Loss, VSEPPLoss
from vse_ray.losses.ladder import quantile_thresholds, threshold_levels


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("hard_contrastive", [True, False])
@pytest.mark.parametrize(
    ("thresholds", "margins", "betas"),
    [((0.4,), (0.2, 0.01), (1.0, 0.25)), ((0.7, 0.35), (0.2, 0.05, 0.3), (1.0, 0.5, 0.125))],
)
def test_matches_loop_reference(dtype, hard_contrastive, thresholds, margins, betas):
    img, txt = unit_batch(6, 4, dtype)
    rel = relevance_batch(6, dtype)
    loss = LadderLoss(thresholds, margins, betas, hard_contrastive)(img, txt, rel)
    assert_close(loss, ladder_ref(img @ txt.T, rel, thresholds, margins, betas, hard_contrastive), dtype)
    assert_finite_grads(loss, img, txt)


@pytest.mark.parametrize("dtype", DTYPES)
def test_zero_upper_weights_give_vsepp_and_vse0(dtype):
    img, txt = unit_batch(6, 4, dtype, seed=1)
    rel = relevance_batch(6, dtype)
    hc = LadderLoss((0.6, 0.3), (0.2, 0.1, 0.1), (1.0, 0.0, 0.0))(img, txt, rel)
    full = LadderLoss((0.6, 0.3), (0.2, 0.1, 0.1), (1.0, 0.0, 0.0), hard_contrastive=False)(img, txt, rel)
    torch.testing.assert_close(hc, VSEPPLoss()(img, txt))
    torch.testing.assert_close(full, VSE0Loss()(img, txt))


def test_image_ids_and_asymmetric_relevance():
    img, txt = unit_batch(6, 3, torch.float64, seed=2)
    rel = torch.rand(6, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    ids = torch.tensor([0, 1, 1, 2, 3, 3])
    loss = LadderLoss(margins=(0.2, 0.3), betas=(1.0, 1.0))(img, txt, rel, ids)
    expected = ladder_ref(img @ txt.T, rel, (0.4,), (0.2, 0.3), (1.0, 1.0), True, ids.tolist())
    assert_close(loss, expected, torch.float64)


def test_second_ladder_orders_the_negatives():
    # one query: positive 0.9, a relevant negative at 0.1 below an irrelevant one at 0.5 -> only L^2 fires
    sims = torch.tensor([[0.9, 0.1, 0.5], [0.0, 0.9, 0.0], [0.0, 0.0, 0.9]], dtype=torch.float64)
    rel = torch.tensor([[1.0, 0.8, 0.1], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], dtype=torch.float64)
    img, txt = torch.eye(3, dtype=torch.float64), sims.T.contiguous()
    loss = LadderLoss((0.4,), (0.2, 0.01), (1.0, 0.25), reduction="none")(img, txt, rel)
    assert float(loss[0]) == pytest.approx(0.25 * (0.01 - 0.1 + 0.5))
    assert vsepp_ref(sims, 0.2) == 0.0 and vse0_ref(sims, 0.2) == 0.0


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"thresholds": (0.3, 0.5), "margins": (0.2, 0.1, 0.1), "betas": (1, 1, 1)}, "thresholds"),
        ({"margins": (0.2,)}, "margins"),
        ({"betas": (1.0,)}, "betas"),
        ({"margins": (0.2, -0.01)}, "margins"),
        ({"betas": (1.0, -0.25)}, "betas"),
    ],
)
def test_bad_hyper_parameters(kwargs, name):
    with pytest.raises(ValueError, match=name):
        LadderLoss(**kwargs)


@pytest.mark.parametrize("thresholds", [(), (0.4,), (0.7, 0.4, 0.1)])
def test_threshold_levels_equal_the_broadcast_count(thresholds):
    gen = torch.Generator().manual_seed(len(thresholds))
    rel = torch.rand(2, 9, 9, generator=gen).round(decimals=1)  # many values equal to a threshold
    cand = torch.rand(2, 9, 9, generator=gen) < 0.8
    theta = torch.tensor(thresholds)
    expected = (1 + (rel.unsqueeze(-1) < theta).sum(-1)) * cand  # the previous formulation
    assert torch.equal(threshold_levels(rel, cand, theta), expected)
    assert set(threshold_levels(rel, cand, theta).unique().tolist()) == set(range(len(thresholds) + 2))


def test_quantile_thresholds_are_numpy_quantiles_of_the_negatives():
    gen = torch.Generator().manual_seed(3)
    rel = torch.rand(8, 8, generator=gen, dtype=torch.float64)
    cand = torch.rand(8, 8, generator=gen) < 0.7
    stacked_rel, stacked_cand = torch.stack((rel, rel.T)), torch.stack((cand, cand.T))
    theta = quantile_thresholds(stacked_rel, stacked_cand, torch.tensor([0.9, 0.5], dtype=torch.float64))
    expected = np.quantile(rel.numpy()[cand.numpy()], [0.9, 0.5])  # each negative pair once
    np.testing.assert_allclose(theta.numpy(), expected, rtol=1e-12)
    loss = LadderLoss(theta_quantile=(0.9, 0.5), margins=(0.2, 0.01, 0.01), betas=(1.0, 0.5, 0.25))
    fixed = LadderLoss(thresholds=tuple(expected), margins=(0.2, 0.01, 0.01), betas=(1.0, 0.5, 0.25))
    assert torch.equal(loss.levels(stacked_rel, stacked_cand), fixed.levels(stacked_rel, stacked_cand))
    img, txt = unit_batch(8, 5, torch.float64)
    off_diagonal = np.quantile(rel.numpy()[~np.eye(8, dtype=bool)], [0.9, 0.5])  # forward's negatives
    fixed = LadderLoss(thresholds=tuple(off_diagonal), margins=(0.2, 0.01, 0.01), betas=(1.0, 0.5, 0.25))
    assert torch.allclose(loss(img, txt, rel), fixed(img, txt, rel))
    share = (loss.levels(rel, cand) == 1).sum() / cand.sum()
    assert abs(float(share) - 0.1) < 0.05  # the top 10 % of the negatives are level 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"theta_quantile": 1.0}, r"in \(0, 1\)"),
        ({"theta_quantile": 0.0}, r"in \(0, 1\)"),
        ({"theta_quantile": (0.5, 0.9), "margins": (0.2, 0.1, 0.1), "betas": (1, 1, 1)}, "decreasing"),
        ({"theta_quantile": 0.9, "thresholds": (0.4,)}, "not both"),
        ({"theta_quantile": (0.9, 0.5)}, "margins"),
    ],
)
def test_bad_theta_quantile(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LadderLoss(**kwargs)
