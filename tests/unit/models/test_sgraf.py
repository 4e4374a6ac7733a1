"""SGRAF (Diao et al., AAAI 2021): batched SGR/SAF scores against a per-pair loop written from the paper."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.support.xattn_inputs import region_word_batch, token_batch
from vse_ray.models.sgraf import SGRAFModel
from vse_ray.models.sgraf_modules import CaptionBatchNorm

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _l2n(x):
    return x / (x.norm() + 1e-8)


def _bn_eval(x, bn, channel=0):
    return (x - bn.running_mean[channel]) / torch.sqrt(bn.running_var[channel] + bn.eps) * bn.weight[
        channel
    ] + bn.bias[channel]


def _leaky(x):
    return torch.where(x > 0, x, 0.1 * x)


def image_global(model, regions):
    """v̂ of one image (R, E): region self-attention guided by the mean region (eval mode)."""
    sa = model.image_global
    g = torch.tanh(_bn_eval(sa.glob[0](regions.mean(0)), sa.glob[1], slice(None)))
    gates = torch.stack(
        [
            sa.common(torch.tanh(_bn_eval(sa.local[0](regions[r]), sa.local[1], r)) * g)
            for r in range(len(regions))
        ]
    )
    return _l2n((torch.softmax(gates.squeeze(-1), 0)[:, None] * regions).sum(0))


def sgraf_pair(model, regions, words):
    """S(I, T) of one image (R, E) and one caption's real words (L, E), one alignment node at a time."""
    sa = model.text_global
    g = sa.glob[0](words.mean(0)).tanh()
    gates = torch.stack([sa.common(sa.local[0](w).tanh() * g) for w in words]).squeeze(-1)
    text_hat = _l2n((torch.softmax(gates, 0)[:, None] * words).sum(0))
    nodes = [_l2n(model.global_sim((image_global(model, regions) - text_hat) ** 2))]
    s = words @ regions.T  # (L, R)
    column_norm = _leaky(s).norm(dim=0)  # normalised over the words, for each region
    for j in range(len(words)):
        alpha = torch.softmax(9.0 * _leaky(s[j]) / (column_norm + 1e-8), 0)
        attended = _l2n((alpha[:, None] * regions).sum(0))
        nodes.append(_l2n(model.local_sim((attended - words[j]) ** 2)))
    if model.module == "sgr":
        for step in model.reasoning:
            edges = [
                torch.softmax(torch.stack([step.query(p) @ step.key(q) for q in nodes]), 0) for p in nodes
            ]
            nodes = [torch.relu(step.update(sum(e[k] * nodes[k] for k in range(len(nodes))))) for e in edges]
        vector = nodes[0]
    else:
        f = model.filtration
        gate = torch.stack([torch.sigmoid(_bn_eval(f.gate(p)[0], f.bn)) for p in nodes])
        vector = _l2n(sum((gate[k] / gate.sum()) * nodes[k] for k in range(len(nodes))))
    return torch.sigmoid(model.final(vector))[0]


def _model(module: str, n_regions: int = 5, **kwargs) -> SGRAFModel:
    torch.manual_seed(3)
    model = SGRAFModel(
        vocab_size=30,
        feature_dim=7,
        word_dim=5,
        embed_dim=6,
        n_regions=n_regions,
        module=module,
        sim_dim=4,
        **kwargs,
    ).double()
    for bn in [m for m in model.modules() if isinstance(m, nn.BatchNorm1d | CaptionBatchNorm)]:
        bn.running_mean.uniform_(-0.3, 0.3)
        bn.running_var.uniform_(0.5, 2.0)
        bn.weight.data.uniform_(0.5, 1.5)
        bn.bias.data.uniform_(-0.2, 0.2)
    return model.eval()


@pytest.mark.parametrize("module", ["sgr", "saf"])
def test_batched_scores_equal_the_per_pair_loop(module):
    model = _model(module)
    regions, words, lengths = region_word_batch()
    with torch.no_grad():
        got = model.score(regions, words, lengths)
        want = torch.stack(
            [
                torch.stack(
                    [sgraf_pair(model, regions[i], words[j, : lengths[j]]) for j in range(len(words))]
                )
                for i in range(len(regions))
            ]
        )
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_filtration_batch_norm_trains_per_caption_like_the_reference_loop():
    """The reference scores caption by caption: BatchNorm1d(1) over (N_img, 1, L_t + 1), updated each time."""
    ours, ref = CaptionBatchNorm().double(), nn.BatchNorm1d(1).double()
    x = torch.randn(3, 4, 5, dtype=torch.float64, requires_grad=True)
    mask = torch.arange(5) < torch.tensor([5, 2, 4, 3])[:, None]
    got = ours(x, mask)
    for t in range(4):
        n = int(mask[t].sum())
        torch.testing.assert_close(
            got[:, t, :n], ref(x[:, t, :n].unsqueeze(1)).squeeze(1), rtol=1e-10, atol=1e-12
        )
    torch.testing.assert_close(ours.running_mean, ref.running_mean, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(ours.running_var, ref.running_var, rtol=1e-12, atol=1e-14)
    assert int(ours.num_batches_tracked) == int(ref.num_batches_tracked) == 4


@pytest.mark.parametrize("module", ["sgr", "saf"])
def test_training_blocks_and_gradients(module):
    model = _model(module, n_regions=3, dropout=0.0).train()
    images = torch.randn(4, 3, 7, dtype=torch.float64)
    tokens, lengths = token_batch(4, 30)
    model.max_pairs = 4  # one caption per block: same scores as one block
    blocked = model(images, tokens, lengths)
    model.max_pairs = 10_000
    whole = model(images, tokens, lengths)
    torch.testing.assert_close(blocked, whole, rtol=1e-10, atol=1e-12)
    whole.trace().backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_bad_inputs_are_refused():
    model = _model("sgr", n_regions=3)
    with pytest.raises(ValueError, match="region features .*pooled"):
        model.encode_images(torch.randn(4, 7, dtype=torch.float64))
    with pytest.raises(ValueError, match="built for 3 regions"):
        model.encode_images(torch.randn(4, 5, 7, dtype=torch.float64))
    with pytest.raises(ValueError, match="module: SGRAF has the modules"):
        SGRAFModel(vocab_size=30, feature_dim=7, module="sga")
