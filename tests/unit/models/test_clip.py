"""Model "clip": the checkpoint's preprocessing on stored pixels, its logit scale and bias, its options."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from vse_ray.data.precompute.config import PrecomputeConfig
from vse_ray.data.sources.image_io import fit_image
from vse_ray.models import build_model
from vse_ray.models.clip_files import check_clip_source
from vse_ray.models.clip_preprocess import PixelPreprocess, PixelSpec


@pytest.mark.parametrize("size", [(48, 40), (40, 61), (32, 32)])
def test_stored_shortest_fit_is_open_clips_preprocessing(size, tiny_clip):
    """An image stored as precompute's "shortest" fit to the tower's size, then scaled and normalised by the
    model, equals open_clip's own transform of the original image (resize, centre crop, normalise)."""
    import open_clip

    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (*size, 3), dtype=np.uint8))
    name = f"local-dir:{tiny_clip['open_clip']['pretrained']}"
    model, _, transform = open_clip.create_model_and_transforms(name)
    stored = torch.from_numpy(np.array(fit_image(image, 32, "shortest")))[None]
    spec = PixelSpec.from_open_clip(model.visual.preprocess_cfg, "tiny")
    torch.testing.assert_close(PixelPreprocess(spec)(stored)[0], transform(image), rtol=0, atol=1e-6)


def test_an_image_at_the_towers_size_is_only_scaled_and_normalised():
    """At the crop's size (here not square), each value is (x / 255 - mean_c) / std_c of its channel c, to
    the bit, as a channels-first view of the batch."""
    mean, std = (0.1, 0.5, 0.9), (0.2, 0.3, 0.7)
    spec = PixelSpec((3, 5), (3, 5), "squash", "bicubic", mean, std, "test")
    images = torch.from_numpy(np.random.default_rng(0).integers(0, 256, (2, 3, 5, 3), dtype=np.uint8))
    mean_c, std_c = torch.tensor(mean)[:, None, None], torch.tensor(std)[:, None, None]
    want = (images.permute(0, 3, 1, 2).float() / 255.0 - mean_c) / std_c
    got = PixelPreprocess(spec)(images)
    assert got.shape == (2, 3, 3, 5) and torch.equal(got, want)


def test_the_checkpoint_logit_scale_and_bias_are_exposed(tiny_clip):
    open_clip_model = build_model("clip", **tiny_clip["open_clip"])
    assert open_clip_model.logit_scale is open_clip_model.towers.model.logit_scale
    assert open_clip_model.logit_bias is None
    siglip = build_model("clip", **tiny_clip["siglip"])
    assert siglip.logit_bias is siglip.towers.model.logit_bias
    scale, bias = float(siglip.towers.model.logit_scale), float(siglip.towers.model.logit_bias)
    assert siglip.learned_logits == {"logit_scale": scale, "logit_bias": bias}
    assert open_clip_model.learned_logits == {"logit_scale": float(open_clip_model.towers.model.logit_scale)}
    names = {name for name, _ in siglip.named_parameters()}
    assert {"towers.model.logit_scale", "towers.model.logit_bias"} <= names  # trained with the model


@pytest.mark.parametrize(
    ("params", "error", "fragment"),
    [
        ({"backend": "jax"}, ValueError, "model_params.backend: must be one of"),
        ({}, ValueError, "model_params.arch: an open_clip architecture or config JSON is needed"),
        ({"arch": "hf-hub:timm/ViT-B-16-SigLIP"}, ValueError, "an architecture name or config JSON"),
        ({"arch": "ViT-B-32", "pretrained": "laion2b_s34b_b79k"}, ValueError, "is a hub tag"),
        ({"arch": "ViT-B-32", "pretrained": "./w.pt"}, FileNotFoundError, "no such file or folder"),
        ({"arch": "nothere.json"}, FileNotFoundError, "no such config JSON"),
        ({"backend": "hf"}, ValueError, "backend hf needs a save_pretrained folder"),
    ],
)
def test_bad_options_are_named_before_a_library_is_imported(params, error, fragment):
    with pytest.raises(error, match=None) as raised:
        check_clip_source(**params)
    assert fragment in str(raised.value) and "\n" not in str(raised.value)


def test_precompute_resize_mode_is_checked_and_keeps_old_hashes():
    assert "resize_mode" not in PrecomputeConfig().resolved().to_dict()  # folders of before keep their hash
    assert PrecomputeConfig(resize_mode="shortest").hash() != PrecomputeConfig().hash()
    with pytest.raises(ValueError, match="resize_mode must be one of"):
        PrecomputeConfig(resize_mode="crop").resolved()


def test_a_shipped_arch_resolves_by_its_file_name_unless_a_local_file_has_it(tmp_path, monkeypatch):
    """`clip-tiny.json` names the shipped tiny towers (the study protocol's), the tests' tiny config."""
    import json

    from tests.support.tiny_clip import OPEN_CLIP_CFG
    from vse_ray.models.clip_files import SHIPPED_ARCHS

    monkeypatch.chdir(tmp_path)
    source = check_clip_source(arch="clip-tiny.json")
    assert source.arch == str(SHIPPED_ARCHS / "clip-tiny.json")
    assert json.loads((SHIPPED_ARCHS / "clip-tiny.json").read_text()) == OPEN_CLIP_CFG
    (tmp_path / "clip-tiny.json").write_text(json.dumps(OPEN_CLIP_CFG))
    assert check_clip_source(arch="clip-tiny.json").arch == "clip-tiny.json"
