"""CNN features: crops against torchvision's TenCrop/CenterCrop, seeded random init, 10-crop mean."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torchvision import transforms

from vse_ray.features import CNNFeatureExtractor, build_frozen_cnn, check_weights, crop_batch
from vse_ray.features.crops import IMAGENET_MEAN, IMAGENET_STD


@pytest.fixture()
def pixels() -> np.ndarray:
    return np.random.default_rng(0).integers(0, 256, size=(3, 40, 40, 3), dtype=np.uint8)


def _reference(image: np.ndarray, crop: int, ten: bool) -> torch.Tensor:
    tf = transforms.Compose(
        [
            transforms.ToTensor(),
            transforms.Normalize(IMAGENET_MEAN, IMAGENET_STD),
            transforms.TenCrop(crop) if ten else transforms.CenterCrop(crop),
        ]
    )
    out = tf(image)
    return torch.stack(out) if ten else out.unsqueeze(0)


@pytest.mark.parametrize("ten", [False, True])
def test_crops_match_torchvision(pixels, ten):
    crops = crop_batch(pixels, crop=32, ten_crop=ten)
    assert crops.shape == (3, 10 if ten else 1, 3, 32, 32)
    for k in range(3):
        torch.testing.assert_close(crops[k], _reference(pixels[k], 32, ten), rtol=1e-5, atol=1e-5)


def test_crop_errors(pixels):
    with pytest.raises(ValueError, match="crop"):
        crop_batch(pixels, crop=41)
    with pytest.raises(ValueError, match="pixels"):
        crop_batch(pixels[..., 0])


def test_random_init_is_seeded_and_keeps_global_rng():
    state = torch.random.get_rng_state()
    a, dim = build_frozen_cnn("resnet18", None, init_seed=3)
    b, _ = build_frozen_cnn("resnet18", None, init_seed=3)
    c, _ = build_frozen_cnn("resnet18", None, init_seed=4)
    assert dim == 512
    assert torch.equal(torch.random.get_rng_state(), state)
    wa, wb, wc = (next(m.parameters()) for m in (a, b, c))
    assert torch.equal(wa, wb) and not torch.equal(wa, wc)


def test_ten_crop_feature_is_the_mean_over_crops(pixels):
    extractor = CNNFeatureExtractor("small", None, crop=32, ten_crop=True, batch_size=2)
    with torch.inference_mode():
        crops = crop_batch(pixels, 32, ten_crop=True)
        expected = torch.stack([extractor.model(crops[k]).mean(0) for k in range(3)]).numpy()
    np.testing.assert_allclose(extractor.features(pixels), expected, rtol=1e-5, atol=1e-6)


def test_rejected_rows_get_zero_vectors(pixels):
    extractor = CNNFeatureExtractor("small", None)
    batch = extractor({"pixels": pixels.copy(), "reject": np.array(["", "missing file", ""], dtype=object)})
    assert "pixels" not in batch and batch["feature"].shape == (3, extractor.dim)
    assert not batch["feature"][1].any()
    np.testing.assert_allclose(batch["feature"][[0, 2]], extractor.features(pixels[[0, 2]]), rtol=1e-5)


def test_check_weights_names_bad_values_and_never_downloads(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    with pytest.raises(ValueError, match=r"resnet18 weights IMAGENET1K_V1 are not in the torch cache \("):
        check_weights("resnet18", "IMAGENET1K_V1")
    (tmp_path / "hub" / "checkpoints").mkdir(parents=True)
    (tmp_path / "hub" / "checkpoints" / "resnet18-f37072fd.pth").write_bytes(b"")
    check_weights("resnet18", "IMAGENET1K_V1")
    with pytest.raises(ValueError, match="weights 'IMAGENET9'"):
        check_weights("resnet152", "IMAGENET9")
    with pytest.raises(ValueError, match="cnn must be"):
        check_weights("alexnet9", None)
