"""LSEH's released-code reading (row-maximum factor, same-image captions at margin 0) against its loss."""

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.unit.losses._reference import assert_close, hinge, relevance_batch, unit_batch
from vse_ray.losses import LSEHLoss
from vse_ray.losses.lseh import row_max_factor

FIXTURE = Path(__file__).parents[2] / "fixtures" / "official" / "lseh_released.npz"


def released_ref(sims, dots, margin, lam, image_ids):
    """Loops: f[i][j] = dots[j][i] / max_k dots[i][k]; same-image pairs in the max with margin 0."""
    n = sims.shape[0]
    s, r = sims.detach().tolist(), dots.tolist()
    f = [[r[j][i] / (max(r[i]) or 1.0) for j in range(n)] for i in range(n)]
    extra = [
        [0.0 if image_ids[i] == image_ids[j] else margin + lam * f[i][j] for j in range(n)] for i in range(n)
    ]
    total = 0.0
    for q in range(n):
        others = [c for c in range(n) if c != q]
        total += max(hinge(extra[q][c] + s[q][c] - s[q][q]) for c in others)  # image q, captions c
        total += max(hinge(extra[c][q] + s[c][q] - s[q][q]) for c in others)  # caption q, images c
    return total


def test_matches_the_released_loss():
    """Fixture: the authors' ContrastiveLossLSEH run on these inputs (tests/fixtures/official/README.md)."""
    data = np.load(FIXTURE, allow_pickle=False)
    loss_fn = LSEHLoss(margin=0.185, lam=0.025, factor="row_max", same_image="zero_margin")
    for c in range(len(data["loss"])):
        img, txt = (torch.from_numpy(data[k][c]).requires_grad_() for k in ("img", "txt"))
        svd = torch.from_numpy(data["svd"][c])
        loss = loss_fn(img, txt, svd @ svd.T, torch.from_numpy(data["image_ids"][c]))
        loss.backward()
        torch.testing.assert_close(loss.item(), float(data["loss"][c]), rtol=1e-6, atol=1e-5)
        torch.testing.assert_close(img.grad.numpy(), data["grad_img"][c], rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(txt.grad.numpy(), data["grad_txt"][c], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("image_ids", [[0, 1, 2, 3, 4, 5], [0, 0, 1, 2, 2, 3]])
def test_released_reading_matches_loops(image_ids):
    img, txt = unit_batch(6, 4, torch.float64, seed=7)
    vectors = torch.randn(6, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(8)) + 0.2
    dots = vectors @ vectors.T
    loss = LSEHLoss(lam=0.4, factor="row_max", same_image="zero_margin")
    expected = released_ref(img @ txt.T, dots, 0.185, 0.4, image_ids)
    assert_close(loss(img, txt, dots, torch.tensor(image_ids)), expected, torch.float64)


def test_row_max_is_the_cosine_on_a_cosine_matrix():
    rel = relevance_batch(6, torch.float64)
    torch.testing.assert_close(row_max_factor(rel), rel)
    img, txt = unit_batch(6, 4, torch.float64, seed=1)
    torch.testing.assert_close(LSEHLoss(factor="row_max")(img, txt, rel), LSEHLoss()(img, txt, rel))


def test_zero_margin_without_image_ids_is_the_default_reading():
    img, txt = unit_batch(6, 4, torch.float64, seed=2)
    rel = relevance_batch(6, torch.float64)
    torch.testing.assert_close(LSEHLoss(same_image="zero_margin")(img, txt, rel), LSEHLoss()(img, txt, rel))


@pytest.mark.parametrize(
    ("kwargs", "name"), [({"factor": "max"}, "factor"), ({"same_image": "keep"}, "same_image")]
)
def test_bad_released_options(kwargs, name):
    with pytest.raises(ValueError, match=name):
        LSEHLoss(**kwargs)
