"""InfoNCE and SigLIP: hard targets equal open_clip's ``ClipLoss`` / ``SigLipLoss`` (loss and gradients),
multi-positive and graded targets equal loops written from the equations, and the learned scale and bias."""

from __future__ import annotations

import math

import pytest
import torch
from open_clip.loss import ClipLoss, SigLipLoss

from tests.unit.losses._reference import relevance_batch, unit_batch
from vse_ray.losses import make_loss

IDS = [0, 0, 1, 2, 3, 3, 3, 4]
B = len(IDS)


def rel_diff(got: torch.Tensor, want: torch.Tensor) -> float:
    """max |got - want| / max |want|."""
    return float((got - want).abs().max() / want.abs().max())


def _ours(name: str, dtype: torch.dtype, **params):
    loss = make_loss(name, **params).to(dtype)
    img, txt = unit_batch(B, 6, dtype, seed=3)
    rel = relevance_batch(B, dtype, seed=3)
    value = loss(img, txt, rel, torch.tensor(IDS))
    value.backward()
    return value, img.grad, txt.grad, loss


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("init_scale", [1 / 0.07, 3.0])
def test_hard_infonce_is_open_clip_clip_loss(dtype, init_scale):
    value, img_grad, txt_grad, loss = _ours("infonce", dtype, init_scale=init_scale)
    img, txt = unit_batch(B, 6, dtype, seed=3)
    log_scale = loss.logit_scale.detach().clone().requires_grad_()  # ln t as stored (float32 rounding)
    want = ClipLoss()(img, txt, log_scale.exp())
    want.backward()
    limit = 1e-6 if dtype == torch.float32 else 1e-14
    assert rel_diff(value.detach(), want.detach()) <= limit
    for got, ref in ((img_grad, img.grad), (txt_grad, txt.grad), (loss.logit_scale.grad, log_scale.grad)):
        assert rel_diff(got, ref) <= limit


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(("init_scale", "init_bias"), [(10.0, -10.0), (4.0, 1.5)])
def test_hard_siglip_is_open_clip_siglip_loss(dtype, init_scale, init_bias):
    value, img_grad, txt_grad, loss = _ours("siglip", dtype, init_scale=init_scale, init_bias=init_bias)
    img, txt = unit_batch(B, 6, dtype, seed=3)
    log_scale = loss.logit_scale.detach().clone().requires_grad_()
    bias = loss.logit_bias.detach().clone().requires_grad_()
    want = SigLipLoss()(img, txt, log_scale.exp(), bias)
    want.backward()
    limit = 1e-6 if dtype == torch.float32 else 1e-14
    assert rel_diff(value.detach(), want.detach()) <= limit
    pairs = ((img_grad, img.grad), (txt_grad, txt.grad), (loss.logit_scale.grad, log_scale.grad))
    for got, ref in (*pairs, (loss.logit_bias.grad, bias.grad)):
        assert rel_diff(got, ref) <= limit


def _log_softmax(row: list[float]) -> list[float]:
    top = max(row)
    log_total = top + math.log(sum(math.exp(v - top) for v in row))
    return [v - log_total for v in row]


def _soft(row: list[float], tau: float) -> list[float]:
    """exp((r_j - max r) / τ), the graded weights of one row."""
    top = max(row)
    return [math.exp((v - top) / tau) for v in row]


def infonce_ref(sims, rel, ids, targets, scale, tau, lam) -> float:
    """Mean over pairs of (ℓ_i2t + ℓ_t2i) / 2, each -Σ_c T_qc log softmax(t s_q)_c, written per element."""
    s, r = sims.tolist(), rel.tolist()
    total = 0.0
    for direction in (0, 1):
        for q in range(B):
            row = [s[q][c] if direction == 0 else s[c][q] for c in range(B)]
            rel_row = [r[q][c] if direction == 0 else r[c][q] for c in range(B)]
            pos = [c == q or (targets != "hard" and ids[c] == ids[q]) for c in range(B)]
            target = [p / sum(pos) for p in pos]
            if targets == "graded":
                w = _soft(rel_row, tau)
                target = [(1 - lam) * t + lam * wc / sum(w) for t, wc in zip(target, w, strict=True)]
            logp = _log_softmax([scale * v for v in row])
            total -= sum(t * lp for t, lp in zip(target, logp, strict=True)) / 2
    return total / B


def siglip_ref(sims, rel, ids, targets, scale, bias, tau, lam) -> float:
    """Σ_ij -[y log σ(z) + (1 - y) log σ(-z)] / B, z = t s + b, written per element."""
    s, r = sims.tolist(), rel.tolist()
    cols = [[r[k][j] for k in range(B)] for j in range(B)]
    total = 0.0
    for i in range(B):
        w_row = _soft(r[i], tau)
        for j in range(B):
            y = float(i == j or (targets != "hard" and ids[i] == ids[j]))
            if targets == "graded":
                y = (1 - lam) * y + lam * (w_row[j] + _soft(cols[j], tau)[i]) / 2
            z = scale * s[i][j] + bias
            log_sig = -math.log1p(math.exp(-z)) if z > 0 else z - math.log1p(math.exp(z))
            log_sig_neg = log_sig - z
            total -= y * log_sig + (1 - y) * log_sig_neg
    return total / B


@pytest.mark.parametrize("targets", ["hard", "multi", "graded"])
@pytest.mark.parametrize(("tau", "lam"), [(0.1, 0.5), (0.5, 0.2)])
def test_infonce_equals_the_loop(targets, tau, lam):
    loss = make_loss("infonce", targets=targets, temperature=tau, soft_weight=lam, init_scale=7.0).double()
    img, txt = unit_batch(B, 6, torch.float64, seed=5)
    rel = relevance_batch(B, torch.float64, seed=5)
    got = loss(img, txt, rel, torch.tensor(IDS)).item()
    want = infonce_ref(img @ txt.T, rel, IDS, targets, loss.logit_scale.exp().item(), tau, lam)
    assert got == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("targets", ["hard", "multi", "graded"])
@pytest.mark.parametrize(("tau", "lam"), [(0.1, 0.5), (0.5, 0.2)])
def test_siglip_equals_the_loop(targets, tau, lam):
    loss = make_loss(
        "siglip", targets=targets, temperature=tau, soft_weight=lam, init_scale=5.0, init_bias=-2.0
    )
    loss = loss.double()
    img, txt = unit_batch(B, 6, torch.float64, seed=5)
    rel = relevance_batch(B, torch.float64, seed=5)
    got = loss(img, txt, rel, torch.tensor(IDS)).item()
    want = siglip_ref(img @ txt.T, rel, IDS, targets, loss.logit_scale.exp().item(), -2.0, tau, lam)
    assert got == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("name", ["infonce", "siglip"])
@pytest.mark.parametrize("targets", ["multi", "graded"])
def test_gradients_match_finite_differences(name, targets):
    loss = make_loss(name, targets=targets, init_scale=3.0).double()
    img, txt = unit_batch(B, 4, torch.float64, seed=6)
    rel = relevance_batch(B, torch.float64, seed=6)
    assert torch.autograd.gradcheck(lambda a, b: loss(a, b, rel, torch.tensor(IDS)), (img, txt))


@pytest.mark.parametrize("name", ["infonce", "siglip"])
def test_targets_differ_and_multi_without_ids_is_hard(name):
    img, txt = unit_batch(B, 6, torch.float64, seed=5)
    rel = relevance_batch(B, torch.float64, seed=5)
    ids = torch.tensor(IDS)
    values = {
        t: make_loss(name, targets=t).double()(img, txt, rel, ids).item() for t in ("hard", "multi", "graded")
    }
    assert len(set(values.values())) == 3
    hard = make_loss(name).double()(img, txt)
    assert torch.equal(make_loss(name, targets="multi").double()(img, txt), hard)
    # λ = 0: the graded targets are the multi-positive ones
    multi = make_loss(name, targets="multi").double()(img, txt, None, ids)
    torch.testing.assert_close(
        make_loss(name, targets="graded", soft_weight=0.0).double()(img, txt, rel, ids), multi
    )


@pytest.mark.parametrize("name", ["infonce", "siglip"])
def test_relevance_source_only_in_the_graded_mode(name):
    assert make_loss(name).relevance_source is None
    assert make_loss(name, targets="multi").relevance_source is None
    assert make_loss(name, targets="graded").relevance_source == "sbert"
    assert make_loss(name, targets="graded", relevance_source="scene").relevance_source == "scene"
    with pytest.raises(ValueError, match="only graded targets"):
        make_loss(name, relevance_source="scene")
    img, txt = unit_batch(4, 3, torch.float32)
    with pytest.raises(ValueError, match="relevance is required"):
        make_loss(name, targets="graded")(img, txt)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"targets": "soft"}, "targets"),
        ({"temperature": 0.0}, "temperature"),
        ({"soft_weight": 1.5}, "soft_weight"),
        ({"init_scale": 0.0}, "init_scale"),
        ({"init_scale": 150.0}, "init_scale"),
    ],
)
def test_bad_hyper_parameters(params, match):
    for name in ("infonce", "siglip"):
        with pytest.raises(ValueError, match=match):
            make_loss(name, **params)


def test_learned_parameters_start_clamp_and_save():
    clip, sig = make_loss("infonce"), make_loss("siglip")
    assert clip.logit_scale.exp().item() == pytest.approx(1 / 0.07)
    assert sig.logit_scale.item() == pytest.approx(math.log(10)) and sig.logit_bias.item() == -10.0
    assert [n for n, _ in clip.named_parameters()] == ["logit_scale"]
    assert [n for n, _ in sig.named_parameters()] == ["logit_scale", "logit_bias"]
    sig.start_from({"logit_scale": 2.5, "logit_bias": -3.0})
    assert sig.logit_scale.item() == 2.5 and sig.logit_bias.item() == -3.0
    fixed = make_loss("siglip", model_scale=False)
    fixed.start_from({"logit_scale": 2.5, "logit_bias": -3.0})
    assert fixed.logit_bias.item() == -10.0
    with torch.no_grad():
        clip.logit_scale.fill_(6.0)
    clip.after_step()
    assert clip.logit_scale.item() == pytest.approx(math.log(100))
    restored = make_loss("infonce")
    restored.load_state_dict(clip.state_dict())
    assert restored.logit_scale.item() == pytest.approx(math.log(100))
