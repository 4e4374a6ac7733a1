"""SAM's released-code reading (sampling, crossed margins, clip, weight) against the released loss itself."""

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.unit.losses._reference import assert_close, directions, hinge, unit_batch, vsepp_ref
from tests.unit.losses.test_sam import cider_like, sam_ref
from vse_ray.losses import SAMLoss

FIXTURE = Path(__file__).parents[2] / "fixtures" / "official" / "sam_released.npz"


def released_ref(sims, rel, tau, sampling, clip=None, image_ids=None):
    """The released reading in loops: picks ranked over the candidates plus the row's own column, margins
    a_j / b_j of image j from its own other-direction pick, read at the picked column."""
    n = sims.shape[0]
    s, phi = sims.detach().tolist(), rel.tolist()
    negs = next(directions(sims, rel, image_ids))[2]

    def second(keys, row):
        ranked = sorted([row, *negs[row]], key=lambda c: keys[c], reverse=sampling == "soft")
        return ranked[1]

    def margin(j, pick):
        value = (phi[j][j] - phi[j][pick]) / tau
        return value if clip is None else min(value, clip)

    n_pick = [second([s[i][j] - s[i][i] for j in range(n)], i) for i in range(n)]
    m_pick = [second([s[i][j] - s[j][j] for j in range(n)], i) for i in range(n)]
    total = 0.0
    for i in range(n):
        c, m = n_pick[i], m_pick[i]
        total += hinge(s[i][c] - s[i][i] + margin(c, m_pick[c]))  # a_c: caption c's image, its t2i pick
        total += hinge(s[i][m] - s[m][m] + margin(m, n_pick[m]))  # b_m: image m, its i2t pick
    return total


def test_matches_the_released_loss():
    """Fixture: the authors' ContrastiveLossMetric run on these inputs (tests/fixtures/official/README.md)."""
    data = np.load(FIXTURE, allow_pickle=False)
    for c in range(len(data["loss"])):
        img, txt = (torch.from_numpy(data[k][c]).requires_grad_() for k in ("img", "txt"))
        loss_fn = SAMLoss(
            tau=float(data["tau"][c]),
            sampling=str(data["sampling"][c]),
            triplet=False,
            reading="released",
            margin_clip=1.0,
            weight=float(data["weight"][c]),
        )
        loss = loss_fn(img, txt, torch.from_numpy(data["rel"][c]))
        loss.backward()
        torch.testing.assert_close(loss.item(), float(data["loss"][c]), rtol=1e-6, atol=1e-5)
        torch.testing.assert_close(img.grad.numpy(), data["grad_img"][c], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(txt.grad.numpy(), data["grad_txt"][c], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("sampling", ["soft", "hard"])
@pytest.mark.parametrize("clip", [None, 0.5])
@pytest.mark.parametrize("image_ids", [None, [0, 0, 1, 2, 2, 3, 4]])
def test_released_reading_matches_loops(sampling, clip, image_ids):
    img, txt = unit_batch(7, 4, torch.float64, seed=3)
    rel = cider_like(7, torch.float64, seed=4)
    ids = None if image_ids is None else torch.tensor(image_ids)
    loss = SAMLoss(tau=2.0, sampling=sampling, triplet=False, reading="released", margin_clip=clip)
    expected = released_ref(img @ txt.T, rel, 2.0, sampling, clip, image_ids)
    assert_close(loss(img, txt, rel, ids), expected, torch.float64)
    with_triplet = SAMLoss(tau=2.0, sampling=sampling, reading="released", margin_clip=clip, weight=3.0)
    expected = 3.0 * expected + vsepp_ref(img @ txt.T, 0.2, image_ids)
    assert_close(with_triplet(img, txt, rel, ids), expected, torch.float64)


def test_soft_takes_the_hardest_negative_once_the_positive_ranks_first():
    """Every image ranks its positive first here: "soft" then picks HN's caption (image->text)."""
    img = torch.eye(4, dtype=torch.float64)
    txt = torch.nn.functional.normalize(
        img + 0.3 * torch.rand(4, 4, generator=torch.Generator().manual_seed(0))
    )
    sims = img @ txt.T
    assert bool((sims.argmax(1) == torch.arange(4)).all())
    released = SAMLoss(sampling="soft", reading="released", triplet=False, reduction="none")
    pick = released._released_pick(sims - sims.diagonal().unsqueeze(1), ~torch.eye(4, dtype=torch.bool))
    torch.testing.assert_close(pick.columns.squeeze(-1), sims.fill_diagonal_(-2).argmax(1))


def test_paper_reading_clip_and_weight():
    img, txt = unit_batch(6, 4, torch.float64, seed=5)
    rel = cider_like(6, torch.float64, seed=6)
    plain = SAMLoss(tau=1.0, sampling="hn", triplet=False)(img, txt, rel)
    assert_close(plain, sam_ref(img @ txt.T, rel, 1.0, "hn", False), torch.float64)
    clipped = SAMLoss(tau=1.0, sampling="hn", triplet=False, margin_clip=1.0)(img, txt, rel)
    expected = sam_ref(img @ txt.T, rel, 1.0, "hn", False, clip=1.0)
    assert_close(clipped, expected, torch.float64)
    assert float(clipped.detach()) < float(plain.detach())
    weighted = SAMLoss(tau=1.0, sampling="hn", weight=5.0)(img, txt, rel)
    expected = 5.0 * sam_ref(img @ txt.T, rel, 1.0, "hn", False) + vsepp_ref(img @ txt.T, 0.2)
    assert_close(weighted, expected, torch.float64)


def test_released_random_picks_a_candidate():
    img, txt = unit_batch(5, 3, torch.float64, seed=1)
    rel = cider_like(5, torch.float64)
    loss = SAMLoss(sampling="random", reading="released", triplet=False)
    torch.manual_seed(0)
    values = {round(float(loss(img, txt, rel).detach()), 9) for _ in range(20)}
    assert len(values) > 1 and all(np.isfinite(v) for v in values)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"reading": "official"}, "reading"),
        ({"reading": "released", "sampling": "sn"}, "sampling"),
        ({"sampling": "soft"}, "sampling"),
        ({"reading": "released", "sampling": "soft", "t2i_margin": "negative_refs"}, "t2i_margin"),
        ({"weight": -1.0}, "weight"),
    ],
)
def test_bad_released_options(kwargs, name):
    with pytest.raises(ValueError, match=name):
        SAMLoss(**kwargs)
