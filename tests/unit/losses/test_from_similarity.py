"""One loss contract: every loss family gives the same value and gradients from a similarity matrix as from
the embeddings that produce it, and trains a similarity model (SCAN) through ``from_similarity``."""

from __future__ import annotations

import pytest
import torch

from tests.support.xattn_inputs import token_batch
from tests.unit.losses._reference import relevance_batch, unit_batch
from vse_ray.losses import LOSS_NAMES, make_loss
from vse_ray.models.scan import SCANModel

VARIANTS = [(name, {}) for name in LOSS_NAMES] + [
    ("ladder", {"hard_contrastive": False}),
    ("ladder_auto", {"hard_contrastive": False}),
    ("sam", {"sampling": "rs"}),
    ("sam", {"sampling": "hn", "triplet": False}),
    ("bcls", {"kendall": "full"}),
    ("vsepp", {"reduction": "none"}),
    ("infonce", {"targets": "multi"}),
    ("infonce", {"targets": "graded"}),
    ("siglip", {"targets": "multi"}),
    ("siglip", {"targets": "graded"}),
]
IMAGE_IDS = torch.tensor([0, 0, 1, 2, 3, 3, 4, 5])


@pytest.mark.parametrize(("name", "params"), VARIANTS, ids=[f"{n}-{p}" for n, p in VARIANTS])
def test_similarity_matrix_gives_the_embeddings_value_and_gradients(name, params):
    loss = make_loss(name, **params)
    img, txt = unit_batch(8, 5, torch.float64, seed=4)
    rel = relevance_batch(8, torch.float64, seed=4)
    torch.manual_seed(0)
    from_emb = loss(img, txt, rel, IMAGE_IDS)
    grads_emb = torch.autograd.grad(from_emb.sum(), (img, txt))
    img2, txt2 = img.detach().clone().requires_grad_(), txt.detach().clone().requires_grad_()
    torch.manual_seed(0)
    from_sims = loss.from_similarity(img2 @ txt2.T, rel, IMAGE_IDS)
    grads_sims = torch.autograd.grad(from_sims.sum(), (img2, txt2))
    assert torch.equal(from_emb, from_sims)
    assert from_emb.sum() > 0
    for a, b in zip(grads_emb, grads_sims, strict=True):
        assert torch.equal(a, b) and a.abs().sum() > 0


@pytest.mark.parametrize("name", LOSS_NAMES)
def test_every_loss_trains_a_similarity_model(name):
    torch.manual_seed(0)
    model = SCANModel(vocab_size=30, feature_dim=7, word_dim=5, embed_dim=6)
    tokens, lengths = token_batch(6, 30)
    sims = model(torch.randn(6, 3, 7), tokens, lengths)
    value = make_loss(name).from_similarity(sims, relevance_batch(6, torch.float32), IMAGE_IDS[:6])
    value.backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert value > 0 and grads and all(torch.isfinite(g).all() for g in grads)
    assert sum(float(g.abs().sum()) for g in grads) > 0
