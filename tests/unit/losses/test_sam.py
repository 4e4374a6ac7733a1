import pytest
import torch

from tests.unit.losses._reference import (
    DTYPES,
    assert_close,
    assert_finite_grads,
    directions,
    hinge,
    unit_batch,
    vsepp_ref,
)
from vse_ray.losses import SAMLoss


def cider_like(batch, dtype, seed=0):
    """Asymmetric metric matrix (rows: images, columns: captions) with a large diagonal, as CIDEr gives."""
    gen = torch.Generator().manual_seed(seed)
    rel = torch.rand(batch, batch, generator=gen, dtype=torch.float64) * 2
    rel += torch.eye(batch, dtype=torch.float64) * 3
    return rel.to(dtype)


def sam_ref(sims, rel, tau, sampling, triplet):
    """Eq. 7 in loops: per query the hardest (hn) / furthest (sn) negative, margin (R_qq - R_qn) / tau."""
    total = vsepp_ref(sims, 0.2) if triplet else 0.0
    for S, R, negs in directions(sims, rel):
        for q in range(len(S)):
            sign = 1.0 if sampling == "hn" else -1.0
            n = max(negs[q], key=lambda c, row=S[q], sign=sign: sign * row[c])
            total += hinge((R[q][q] - R[q][n]) / tau + S[q][n] - S[q][q])
    return total


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sampling", ["hn", "sn"])
@pytest.mark.parametrize("triplet", [True, False])
def test_matches_loop_reference(dtype, sampling, triplet):
    img, txt = unit_batch(6, 4, dtype)
    rel = cider_like(6, dtype)
    loss = SAMLoss(tau=3.0, sampling=sampling, triplet=triplet)(img, txt, rel)
    assert_close(loss, sam_ref(img @ txt.T, rel, 3.0, sampling, triplet), dtype)
    assert_finite_grads(loss, img, txt)


def test_random_sampling_averages_over_negatives():
    img, txt = unit_batch(4, 3, torch.float64, seed=1)
    rel = cider_like(4, torch.float64)
    loss = SAMLoss(tau=2.0, sampling="rs", triplet=False, reduction="none")
    torch.manual_seed(0)
    mean = torch.stack([loss(img, txt, rel) for _ in range(1500)]).mean(0).detach()
    expected = torch.zeros(4, dtype=torch.float64)
    for S, R, negs in directions(img @ txt.T, rel):
        for q in range(4):
            expected[q] += sum(hinge((R[q][q] - R[q][n]) / 2.0 + S[q][n] - S[q][q]) for n in negs[q]) / 3
    torch.testing.assert_close(mean, expected, atol=0.03, rtol=0.05)


def test_text_to_image_margin_uses_the_transposed_metric():
    img, txt = unit_batch(5, 3, torch.float64, seed=2)
    rel = cider_like(5, torch.float64, seed=3)
    direct = SAMLoss(sampling="hn")(img, txt, rel)
    swapped = SAMLoss(sampling="hn")(txt, img, rel.T)
    torch.testing.assert_close(direct, swapped)
    assert not torch.allclose(direct, SAMLoss(sampling="hn")(img, txt, rel.T))


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"tau": 0.0}, "tau"),
        ({"tau": -1.0}, "tau"),
        ({"sampling": "hard"}, "sampling"),
        ({"triplet_margin": -1.0}, "triplet_margin"),
    ],
)
def test_bad_hyper_parameters(kwargs, name):
    with pytest.raises(ValueError, match=name):
        SAMLoss(**kwargs)


def test_relevance_is_required():
    img, txt = unit_batch(3, 3, torch.float64)
    with pytest.raises(ValueError, match="relevance"):
        SAMLoss()(img, txt)
