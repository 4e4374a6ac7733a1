"""VSE∞: GPO against a direct per-set computation of its equations, and the model's shapes and masks."""

from __future__ import annotations

import math

import pytest
import torch

from vse_ray.models import build_model
from vse_ray.models.gpo import GPO, positional_encoding
from vse_ray.models.vse_inf import compact_regions

torch.manual_seed(0)


@torch.no_grad()
def _direct_gpo(gpo: GPO, features: torch.Tensor, lengths: list[int]) -> torch.Tensor:
    """Eq. 2-4 set by set, dimension by dimension: p_k by the formula, the BiGRU on the unpadded sequence."""
    out = torch.zeros(len(lengths), features.shape[2], dtype=features.dtype)
    for b, n in enumerate(lengths):
        pe = torch.tensor(
            [
                [
                    math.sin(k / 10000 ** (i / gpo.d_pe))
                    if i % 2 == 0
                    else math.cos(k / 10000 ** ((i - 1) / gpo.d_pe))
                    for i in range(gpo.d_pe)
                ]
                for k in range(n)
            ],
            dtype=features.dtype,
        )
        h = gpo.gru(pe[None])[0][0]
        h = (h[:, : h.shape[1] // 2] + h[:, h.shape[1] // 2 :]) / 2
        scores = [float(gpo.linear.weight[0] @ h[k]) / gpo.temperature for k in range(n)]
        theta = [math.exp(s - max(scores)) for s in scores]
        theta = [t / sum(theta) for t in theta]
        for d in range(features.shape[2]):
            ranked = sorted(features[b, :n, d].tolist(), reverse=True)
            out[b, d] = sum(t * v for t, v in zip(theta, ranked, strict=True))
    return out


def test_positional_encoding_formula():
    pe = positional_encoding(5, 6)
    assert pe[3, 2] == pytest.approx(math.sin(3 / 10000 ** (2 / 6)), abs=1e-6)
    assert pe[4, 5] == pytest.approx(math.cos(4 / 10000 ** (4 / 6)), abs=1e-6)


def test_gpo_equals_direct_computation_on_padded_sets():
    gpo = GPO(d_pe=8, d_hidden=6).double()
    features = torch.randn(5, 7, 3, dtype=torch.float64)
    lengths = [7, 2, 5, 1, 7]
    got = gpo(features, torch.tensor(lengths))
    assert torch.allclose(got, _direct_gpo(gpo, features, lengths), atol=1e-10)


def test_compact_regions_puts_kept_rows_first_and_pads_with_zeros():
    regions = torch.randn(2, 6, 4, dtype=torch.float64)
    keep = torch.tensor([[True, False, True, True, False, False], [False] * 5 + [True]])
    compact, lengths = compact_regions(regions, keep)
    padded = torch.zeros(2, 3, 4, dtype=torch.float64)
    padded[0], padded[1, :1] = regions[0, keep[0]], regions[1, keep[1]]
    assert torch.equal(compact, padded) and lengths.tolist() == [3, 1]


def test_gpo_special_cases_average_and_max():
    gpo = GPO(d_pe=8, d_hidden=6)
    features = torch.randn(3, 5, 4)
    torch.nn.init.zeros_(gpo.linear.weight)  # equal scores: uniform θ = average pooling
    assert torch.allclose(gpo(features, torch.tensor([5, 5, 5])), features.mean(1), atol=1e-6)
    gpo.temperature = 1e-9  # a one-hot θ on the largest value of each dimension = max pooling if k=1 wins
    with torch.no_grad():
        gpo.linear.weight.normal_()
    theta = gpo.pool_weights(torch.tensor([5]))[0]
    top = int(theta.argmax())
    assert torch.allclose(
        gpo(features, torch.tensor([5, 5, 5])), features.sort(1, descending=True).values[:, top]
    )


def test_vse_inf_contract_and_gradients():
    model = build_model("vse_inf", vocab_size=40, feature_dim=12, word_dim=8, embed_dim=16)
    assert model.kind == "embedding" and model.feature_layout == "regions"
    regions, tokens, lengths = torch.randn(4, 9, 12), torch.randint(1, 40, (4, 6)), torch.tensor([6, 2, 4, 1])
    sims = model(regions, tokens, lengths)
    assert sims.shape == (4, 4)
    sims.sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    model.eval()
    img = model.encode_images(regions)
    assert torch.allclose(img.norm(dim=1), torch.ones(4), atol=1e-5)
    assert torch.allclose(model.encode_images(regions[:1]), img[:1], atol=1e-6)  # no batch coupling in eval
    with pytest.raises(ValueError, match=r"needs region features \(B, R, D\)"):
        model.encode_images(torch.randn(4, 12))


def test_unknown_model_lists_the_choices():
    with pytest.raises(ValueError, match=r"model: must be one of \[.*'vse_inf', 'vsepp'"):
        build_model("blip", vocab_size=4, feature_dim=2)
