"""Every loss on both row-kernel paths: compiled loops (CPU tensors) and torch (the path of CUDA tensors),
here both on CPU tensors. Tolerance: loss values 1e-5 (float32) / 1e-12 (float64) relative, gradients
2e-6 / 1e-12 of the largest gradient entry."""

import pytest
import torch

from tests.unit.losses._reference import relevance_batch, unit_batch
from vse_ray.losses import LOSS_NAMES, make_loss
from vse_ray.losses.kernels.backend import row_kernel_backend

VALUE_RTOL = {torch.float32: 1e-5, torch.float64: 1e-12}
GRAD_RTOL = {torch.float32: 2e-6, torch.float64: 1e-12}
HPARAMS = {
    "ladder": {"thresholds": (0.6, 0.3), "margins": (0.2, 0.05, 0.01), "betas": (1.0, 0.5, 0.25)},
    "ladder_auto": {"kmeans": "exact"},
    "bcls": {"gamma": 20.0},
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", LOSS_NAMES + ("ladder_auto_lloyd",))
def test_loss_and_gradients_agree_on_both_paths(name, dtype):
    hparams = {"kmeans": "lloyd"} if name == "ladder_auto_lloyd" else HPARAMS.get(name, {})
    loss = make_loss(name.removesuffix("_lloyd"), reduction="none", **hparams)
    img, txt = unit_batch(24, 8, dtype, seed=3)
    rel = relevance_batch(24, dtype, seed=3, dim=4) * (5.0 if loss.relevance_source == "cider" else 1.0)
    image_ids = torch.arange(24) // 3
    results = []
    for backend in ("compiled", "torch"):
        leaves = img.detach().clone().requires_grad_(), txt.detach().clone().requires_grad_()
        with row_kernel_backend(backend):
            torch.manual_seed(0)  # SAM's random sampling, if chosen, draws alike
            value = loss(*leaves, rel if loss.relevance_source else None, image_ids)
            grads = torch.autograd.grad(value.sum(), leaves)
        results.append((value.detach(), grads))
    (value, grads), (expected, expected_grads) = results
    assert value.gt(0).any()
    torch.testing.assert_close(value, expected, rtol=VALUE_RTOL[dtype], atol=VALUE_RTOL[dtype])
    for grad, expected_grad in zip(grads, expected_grads, strict=True):
        scale = expected_grad.abs().max().clamp(min=torch.finfo(dtype).tiny)
        assert float((grad - expected_grad).abs().max() / scale) <= GRAD_RTOL[dtype]


def test_unknown_backend_is_named():
    with pytest.raises(ValueError, match="row kernel backend"), row_kernel_backend("cuda"):
        pass
