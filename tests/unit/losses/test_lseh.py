import pytest
import torch

from tests.unit.losses._reference import (
    DTYPES,
    assert_close,
    assert_finite_grads,
    relevance_batch,
    unit_batch,
    vsepp_ref,
)
from vse_ray.losses import LSEHLoss, VSEPPLoss


@pytest.mark.parametrize("dtype", DTYPES)
def test_matches_loop_reference(dtype):
    img, txt = unit_batch(6, 4, dtype)
    rel = relevance_batch(6, dtype)
    loss = LSEHLoss(lam=0.3)(img, txt, rel)
    assert_close(loss, vsepp_ref(img @ txt.T, 0.185, rel=rel, lam=0.3), dtype)
    assert_finite_grads(loss, img, txt)


@pytest.mark.parametrize("dtype", DTYPES)
def test_lambda_zero_equals_vsepp(dtype):
    img, txt = unit_batch(6, 4, dtype, seed=2)
    rel = relevance_batch(6, dtype)
    torch.testing.assert_close(LSEHLoss(margin=0.2, lam=0.0)(img, txt, rel), VSEPPLoss(margin=0.2)(img, txt))


def test_semantic_term_raises_the_loss_of_related_negatives():
    img, txt = unit_batch(5, 4, torch.float64, seed=4)
    rel = relevance_batch(5, torch.float64).abs()
    assert float(LSEHLoss(lam=0.5)(img, txt, rel).detach()) > float(LSEHLoss(lam=0.0)(img, txt, rel).detach())


def test_asymmetric_relevance_uses_its_transpose_for_text_to_image():
    img, txt = unit_batch(4, 3, torch.float64, seed=5)
    rel = torch.rand(4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    assert_close(
        LSEHLoss(lam=0.7)(img, txt, rel), vsepp_ref(img @ txt.T, 0.185, rel=rel, lam=0.7), torch.float64
    )
    swapped = LSEHLoss(lam=0.7)(txt, img, rel.T)
    assert_close(swapped, vsepp_ref(img @ txt.T, 0.185, rel=rel, lam=0.7), torch.float64)
