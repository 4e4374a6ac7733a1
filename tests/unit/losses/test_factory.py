import pytest
import torch

from tests.unit.losses._reference import relevance_batch, unit_batch
from vse_ray.losses import LOSS_NAMES, BaseVSELoss, loss_hparams, make_loss

EXPECTED_SOURCES = {
    "vse0": None,
    "vsepp": None,
    "ladder": "sbert",
    "ladder_auto": "sbert",
    "sam": "cider",
    "bcls": "sbert",
    "lseh": "svd",
    "infonce": "sbert",  # the graded targets' default; hard and multi use none
    "siglip": "sbert",
}


def test_names_and_relevance_sources():
    assert LOSS_NAMES == tuple(EXPECTED_SOURCES)
    for name in LOSS_NAMES:
        loss = make_loss(name)
        assert isinstance(loss, BaseVSELoss) and type(loss).relevance_source == EXPECTED_SOURCES[name]


@pytest.mark.parametrize("name", LOSS_NAMES)
@pytest.mark.parametrize("reduction", ["sum", "mean", "none"])
def test_every_loss_runs_backward_with_image_ids(name, reduction):
    img, txt = unit_batch(6, 5, torch.float32)
    rel = relevance_batch(6, torch.float32)
    value = make_loss(name, reduction=reduction)(img, txt, rel, torch.tensor([0, 0, 1, 2, 3, 3]))
    assert value.shape == ((6,) if reduction == "none" else ())
    value.sum().backward()
    assert torch.isfinite(img.grad).all() and torch.isfinite(txt.grad).all()


def test_mean_is_sum_over_batch():
    img, txt = unit_batch(5, 4, torch.float64)
    rel = relevance_batch(5, torch.float64)
    for name in LOSS_NAMES:
        total = make_loss(name, reduction="sum")(img, txt, rel)
        torch.testing.assert_close(make_loss(name, reduction="mean")(img, txt, rel) * 5, total)


def test_unknown_name_or_hyper_parameter():
    with pytest.raises(ValueError, match="'triplet'"):
        make_loss("triplet")
    with pytest.raises(ValueError, match="tau"):
        make_loss("vsepp", tau=5.0)
    assert loss_hparams("lseh") == {
        "margin": 0.185,
        "lam": 0.025,
        "factor": "cosine",
        "same_image": "exclude",
        "reduction": "sum",
        "relevance_source": None,
    }


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((torch.zeros(4, 3), torch.zeros(4, 2)), "txt_emb"),
        ((torch.zeros(4), torch.zeros(4)), "img_emb"),
        ((torch.zeros(4, 3), torch.zeros(4, 3), torch.zeros(3, 3)), "relevance"),
        ((torch.zeros(4, 3), torch.zeros(4, 3), torch.full((4, 4), float("nan"))), "relevance"),
        (
            (torch.zeros(4, 3), torch.zeros(4, 3), torch.zeros(4, 4), torch.zeros(3, dtype=torch.long)),
            "image_ids",
        ),
        ((torch.zeros(4, 3), torch.zeros(4, 3), None), "relevance"),
    ],
)
def test_bad_inputs(args, match):
    with pytest.raises(ValueError, match=match):
        make_loss("ladder")(*args)


def test_bad_reduction_and_margin():
    with pytest.raises(ValueError, match="reduction"):
        make_loss("vsepp", reduction="max")
    with pytest.raises(ValueError, match="margin"):
        make_loss("vse0", margin=-0.2)
    with pytest.raises(ValueError, match="lam"):
        make_loss("lseh", lam=-1.0)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_one_non_finite_relevance_entry_is_caught(bad):
    img, txt = unit_batch(4, 3, torch.float32)
    rel = relevance_batch(4, torch.float32)
    rel[2, 1] = bad
    with pytest.raises(ValueError, match="non-finite"):
        make_loss("ladder")(img, txt, rel)


def test_finite_relevance_whose_sum_overflows_is_accepted():
    img, txt = unit_batch(4, 3, torch.float32)
    rel = torch.full((4, 4), 3e38)  # finite entries, infinite float32 sum
    assert torch.isfinite(make_loss("ladder")(img, txt, rel))


@pytest.mark.parametrize("name", ["ladder", "ladder_auto", "sam", "bcls", "lseh"])
def test_graded_losses_take_any_relevance_source(name):
    assert make_loss(name, relevance_source="scene").relevance_source == "scene"
    assert make_loss(name, relevance_source=None).relevance_source == EXPECTED_SOURCES[name]
    assert make_loss(name).relevance_source == EXPECTED_SOURCES[name]
    with pytest.raises(ValueError, match="relevance_source must be one of"):
        make_loss(name, relevance_source="bleu")


@pytest.mark.parametrize("name", ["vse0", "vsepp"])
def test_losses_without_relevance_refuse_a_source(name):
    with pytest.raises(ValueError, match="unknown hyper-parameter"):
        make_loss(name, relevance_source="scene")
