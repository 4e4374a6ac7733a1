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


def sam_ref(sims, rel, tau, sampling, triplet, t2i_margin="eq7", clip=None):
    """Eq. 7 in loops: per query the hardest (hn) / furthest (sn) negative n, margin (phi_pp - phi_pn) / tau.

    phi[i][j] = phi(G_i, c_j); ``clip`` bounds the margins from above. Image->text (query image p, negative
    caption n): phi(G_p, c_n). Text->image (query caption p, negative image n): phi(G_p, c_n) for "eq7",
    phi(G_n, c_p) for "negative_refs".
    """
    total = vsepp_ref(sims, 0.2) if triplet else 0.0
    phi = rel.tolist()
    for direction, (S, _, negs) in enumerate(directions(sims, rel)):
        for p in range(len(S)):
            sign = 1.0 if sampling == "hn" else -1.0
            n = max(negs[p], key=lambda c, row=S[p], sign=sign: sign * row[c])
            negative = phi[n][p] if direction == 1 and t2i_margin == "negative_refs" else phi[p][n]
            margin = (phi[p][p] - negative) / tau
            total += hinge((margin if clip is None else min(margin, clip)) + S[p][n] - S[p][p])
    return total


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sampling", ["hn", "sn"])
@pytest.mark.parametrize("triplet", [True, False])
@pytest.mark.parametrize("t2i_margin", ["eq7", "negative_refs"])
def test_matches_loop_reference(dtype, sampling, triplet, t2i_margin):
    img, txt = unit_batch(6, 4, dtype)
    rel = cider_like(6, dtype)
    loss = SAMLoss(tau=3.0, sampling=sampling, triplet=triplet, t2i_margin=t2i_margin)(img, txt, rel)
    assert_close(loss, sam_ref(img @ txt.T, rel, 3.0, sampling, triplet, t2i_margin), dtype)
    assert_finite_grads(loss, img, txt)


def test_default_text_to_image_margin_keeps_the_positive_references():
    """Eq. 7 and the authors' code: phi(G_p, .) in both directions. On asymmetric (CIDEr-like) relevance the
    two readings differ; on symmetric relevance they agree."""
    img, txt = unit_batch(10, 4, torch.float64, seed=4)
    rel = cider_like(10, torch.float64, seed=5)
    assert SAMLoss().t2i_margin == "eq7"
    sims = (img @ txt.T).detach()
    default = SAMLoss(tau=1.0, triplet=False)(img, txt, rel)
    other = SAMLoss(tau=1.0, triplet=False, t2i_margin="negative_refs")(img, txt, rel)
    assert_close(default, sam_ref(sims, rel, 1.0, "sn", False), torch.float64)
    assert abs(float((default - other).detach())) > 0.1
    symmetric = (rel + rel.T) / 2
    torch.testing.assert_close(
        SAMLoss(t2i_margin="eq7")(img, txt, symmetric),
        SAMLoss(t2i_margin="negative_refs")(img, txt, symmetric),
    )


def test_random_sampling_averages_over_negatives():
    img, txt = unit_batch(4, 3, torch.float64, seed=1)
    rel = cider_like(4, torch.float64)
    loss = SAMLoss(tau=2.0, sampling="rs", triplet=False, reduction="none")
    torch.manual_seed(0)
    mean = torch.stack([loss(img, txt, rel) for _ in range(1500)]).mean(0).detach()
    expected = torch.zeros(4, dtype=torch.float64)
    phi = rel.tolist()
    for S, _, negs in directions(img @ txt.T, rel):
        for q in range(4):
            expected[q] += sum(hinge((phi[q][q] - phi[q][n]) / 2.0 + S[q][n] - S[q][q]) for n in negs[q]) / 3
    torch.testing.assert_close(mean, expected, atol=0.03, rtol=0.05)


def test_swapping_modalities():
    """ "eq7" reads phi(G_p, c_n) in both directions, so swapping images and captions keeps the loss;
    "negative_refs" transposes phi for text->image, so the swap needs phi transposed."""
    img, txt = unit_batch(5, 3, torch.float64, seed=2)
    rel = cider_like(5, torch.float64, seed=3)
    torch.testing.assert_close(SAMLoss(sampling="hn")(img, txt, rel), SAMLoss(sampling="hn")(txt, img, rel))
    loss = SAMLoss(sampling="hn", t2i_margin="negative_refs")
    torch.testing.assert_close(loss(img, txt, rel), loss(txt, img, rel.T))
    assert not torch.allclose(loss(img, txt, rel), loss(img, txt, rel.T))


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"tau": 0.0}, "tau"),
        ({"tau": -1.0}, "tau"),
        ({"sampling": "hard"}, "sampling"),
        ({"triplet_margin": -1.0}, "triplet_margin"),
        ({"t2i_margin": "transposed"}, "t2i_margin"),
    ],
)
def test_bad_hyper_parameters(kwargs, name):
    with pytest.raises(ValueError, match=name):
        SAMLoss(**kwargs)


def test_relevance_is_required():
    img, txt = unit_batch(3, 3, torch.float64)
    with pytest.raises(ValueError, match="relevance"):
        SAMLoss()(img, txt)
