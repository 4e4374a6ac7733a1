import pytest
import torch

from tests.unit.losses._reference import (
    DTYPES,
    assert_close,
    assert_finite_grads,
    hand_batch,
    unit_batch,
    vsepp_ref,
)
from vse_ray.losses import VSEPPLoss, negative_mask


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", [2, 5, 6])
def test_matches_loop_reference(dtype, batch):
    img, txt = unit_batch(batch, 4, dtype, seed=batch)
    loss = VSEPPLoss()(img, txt)
    assert_close(loss, vsepp_ref(img @ txt.T, 0.2), dtype)
    assert_finite_grads(loss, img, txt)


@pytest.mark.parametrize("dtype", DTYPES)
def test_hand_worked_example_and_directions(dtype):
    img, txt = hand_batch(dtype)
    loss = VSEPPLoss(margin=0.3)
    assert_close(loss(img, txt), 0.3, dtype)
    sims = (img @ txt.T).detach()
    mask = negative_mask(3, None, sims.device)
    torch.testing.assert_close(
        loss.query_loss(sims[None], None, mask[None])[0], torch.tensor([0, 0.1, 0], dtype=dtype)
    )
    torch.testing.assert_close(
        loss.query_loss(sims.T[None], None, mask[None])[0], torch.tensor([0, 0.1, 0.1], dtype=dtype)
    )
    # margin 0.9: image 2 has two violating negatives (0.7 and 0.1); max keeps 0.7 where VSE0 would add 0.8
    per_pair = VSEPPLoss(margin=0.9, reduction="none")(img, txt)
    torch.testing.assert_close(per_pair[1], torch.tensor(0.7 + 0.7, dtype=dtype))


def test_gradient_flows_to_the_hardest_negative_only():
    img, txt = hand_batch(torch.float64)
    VSEPPLoss(margin=0.3)(img, txt).backward()
    # caption 1 is nobody's violating hardest negative, and its own positive terms are satisfied
    assert torch.all(txt.grad[0] == 0)
    assert torch.any(txt.grad[1] != 0)


def test_single_pair_batch_has_no_negatives():
    img, txt = unit_batch(1, 3, torch.float64)
    loss = VSEPPLoss()(img, txt)
    assert float(loss) == 0.0
    assert_finite_grads(loss, img, txt)


def test_image_ids_mask():
    img, txt = unit_batch(5, 3, torch.float64, seed=7)
    ids = torch.tensor([3, 3, 4, 5, 5])
    assert_close(
        VSEPPLoss()(img, txt, image_ids=ids), vsepp_ref(img @ txt.T, 0.2, ids.tolist()), torch.float64
    )
