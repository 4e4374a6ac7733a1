import pytest
import torch

from tests.unit.losses._reference import (
    DTYPES,
    assert_close,
    assert_finite_grads,
    hand_batch,
    unit_batch,
    vse0_ref,
)
from vse_ray.losses import VSE0Loss, negative_mask


@pytest.mark.parametrize("dtype", DTYPES)
def test_matches_loop_reference(dtype):
    img, txt = unit_batch(6, 5, dtype)
    loss = VSE0Loss(margin=0.3)(img, txt)
    assert_close(loss, vse0_ref(img @ txt.T, 0.3), dtype)
    assert_finite_grads(loss, img, txt)


@pytest.mark.parametrize("dtype", DTYPES)
def test_hand_worked_example_and_directions(dtype):
    img, txt = hand_batch(dtype)
    loss = VSE0Loss(margin=0.3)
    # i2t: image 2 vs caption 3: 0.3 - 0.8 + 0.6 = 0.1
    # t2i: caption 2 vs image 1 and caption 3 vs image 2: 0.1 each
    assert_close(loss(img, txt), 0.3, dtype)
    sims = (img @ txt.T).detach()
    mask = negative_mask(3, None, sims.device)
    i2t = loss.query_loss(sims[None], None, mask[None])[0]
    t2i = loss.query_loss(sims.T[None], None, mask[None])[0]
    torch.testing.assert_close(i2t, torch.tensor([0.0, 0.1, 0.0], dtype=dtype))
    torch.testing.assert_close(t2i, torch.tensor([0.0, 0.1, 0.1], dtype=dtype))
    torch.testing.assert_close(loss.__class__(margin=0.3, reduction="none")(img, txt), i2t + t2i)


def test_zero_when_positives_beat_negatives_by_the_margin():
    img = torch.eye(4, dtype=torch.float64, requires_grad=True)
    loss = VSE0Loss(margin=0.5)(img, img)
    assert float(loss) == 0.0
    assert_finite_grads(loss, img)


@pytest.mark.parametrize("dtype", DTYPES)
def test_image_ids_remove_same_image_negatives(dtype):
    img, txt = unit_batch(6, 4, dtype, seed=3)
    ids = torch.tensor([0, 0, 1, 2, 2, 2])
    loss = VSE0Loss(margin=0.4, reduction="mean")(img, txt, image_ids=ids)
    assert_close(loss, vse0_ref(img @ txt.T, 0.4, ids.tolist()) / 6, dtype)
