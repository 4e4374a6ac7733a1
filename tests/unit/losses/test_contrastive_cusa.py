"""InfoNCE as CUSA computes it (Huang et al. AAAI 2024; lerogo/aaai24_itr_cusa 5b996f4 unire/model.py:
``ContrastiveLoss`` in its "mean" mode, τ a parameter), against a loop written from that description:

    L = Σ_{d ∈ {i2t, t2i}} -(1/B) Σ_q (1/C) Σ_c T_qc log softmax_c(s_qc / τ),
    T_qc = [id_q = id_c] / #{c: id_c = id_q}.
"""

from __future__ import annotations

import math

import pytest
import torch

from tests.unit.losses._reference import unit_batch
from vse_ray.losses import make_loss

IDS = torch.tensor([0, 0, 1, 2, 2, 2, 3, 4])


def cusa_loss(sims: torch.Tensor, ids: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
    """The loop: each direction's mean over queries of the mean over candidates, the directions summed."""
    total = sims.new_zeros(())
    n = sims.shape[0]
    for matrix in (sims, sims.T):
        for q in range(n):
            positives = [c for c in range(n) if ids[c] == ids[q]]
            log_norm = torch.logsumexp(matrix[q] / tau, 0)
            row = sum((matrix[q, c] / tau - log_norm) / len(positives) for c in positives)
            total = total - row / n / n
    return total


@pytest.mark.parametrize("tau", [0.05, 0.01])
def test_cusas_mean_mode_with_tau_learned(tau):
    img, txt = unit_batch(len(IDS), 6, torch.float64, seed=5)
    loss = make_loss("infonce", targets="multi", init_scale=1 / tau, scale_param="tau", candidate_mean=True)
    loss = loss.double()
    got = loss(img, txt, image_ids=IDS)
    got.backward()
    ref_img, ref_txt = img.detach().clone().requires_grad_(), txt.detach().clone().requires_grad_()
    ref_tau = loss.tau.detach().clone().requires_grad_()  # τ as stored (float32 rounding)
    want = cusa_loss(ref_img @ ref_txt.T, IDS, ref_tau)
    want.backward()
    assert got.item() == pytest.approx(want.item(), rel=1e-12)
    for ours, theirs in ((img.grad, ref_img.grad), (txt.grad, ref_txt.grad), (loss.tau.grad, ref_tau.grad)):
        torch.testing.assert_close(ours, theirs, rtol=1e-10, atol=1e-14)
    assert [name for name, _ in loss.named_parameters()] == ["tau"]
    default = make_loss("infonce", targets="multi", init_scale=1 / tau).double()
    assert got.item() == pytest.approx(default(img, txt, image_ids=IDS).item() * 2 / len(IDS), rel=1e-6)


def test_tau_is_clamped_started_and_reported_as_the_scale():
    loss = make_loss("infonce", init_scale=20.0, scale_param="tau", scale_range=[10.0, 100.0])
    assert loss.tau.item() == pytest.approx(0.05) and loss.learned_values() == {
        "logit_scale": pytest.approx(20.0)
    }
    with torch.no_grad():
        loss.tau.fill_(0.5)
    loss.after_step()
    assert loss.tau.item() == pytest.approx(0.1)  # CUSA's tau_max
    with torch.no_grad():
        loss.tau.fill_(0.001)
    loss.after_step()
    assert loss.tau.item() == pytest.approx(0.01)  # tau_min
    loss.start_from({"logit_scale": math.log(40.0)})
    assert loss.tau.item() == pytest.approx(1 / 40)
    log = make_loss("infonce", init_scale=20.0, scale_range=[10.0, 50.0])
    with torch.no_grad():
        log.logit_scale.fill_(6.0)
    log.after_step()
    assert log.logit_scale.exp().item() == pytest.approx(50.0)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"scale_param": "exp"}, "scale_param must be one of"),
        ({"scale_range": [0.0, 100.0]}, "scale_range must be"),
        ({"scale_range": [10.0, 200.0]}, "scale_range must be"),
        ({"candidate_mean": "yes"}, "candidate_mean must be true or false"),
    ],
)
def test_bad_options(params, match):
    with pytest.raises(ValueError, match=match):
        make_loss("infonce", **params)
