"""VSE model pieces: shapes, normalisation (VSE++ Sec. 2.2), packed GRU = per-sequence GRU, CNN backbones."""

from __future__ import annotations

import pytest
import torch

from vse_ray.features.cnn import build_cnn
from vse_ray.models import CNNImageEncoder, GRUTextEncoder, ImageProjection, VSEModel


def test_image_projection_unit_norm_and_vse0_switch():
    feats = torch.randn(5, 12)
    assert torch.allclose(ImageProjection(12, 8)(feats).norm(dim=1), torch.ones(5), atol=1e-6)
    raw = ImageProjection(12, 8, normalize=False)
    assert torch.allclose(raw(feats), raw.fc(feats))
    assert not torch.allclose(raw(feats).norm(dim=1), torch.ones(5))


def test_gru_packed_batch_equals_each_sequence_alone():
    enc = GRUTextEncoder(vocab_size=20, word_dim=6, embed_dim=10)
    seqs = [torch.tensor([4, 5, 6, 7]), torch.tensor([8, 9]), torch.tensor([10, 11, 12])]
    padded = torch.zeros(3, 4, dtype=torch.long)
    for i, s in enumerate(seqs):
        padded[i, : len(s)] = s
    out = enc(padded, torch.tensor([len(s) for s in seqs]))
    for i, s in enumerate(seqs):
        hidden = enc.rnn(enc.embed(s[None]))[0][0, -1]  # unpadded reference: last GRU output
        assert torch.allclose(out[i], hidden / hidden.norm(), atol=1e-6)


def test_vse_model_shapes_features_and_raw_images():
    tokens, lengths = torch.randint(4, 30, (3, 7)), torch.tensor([7, 3, 1])
    vsepp = VSEModel(vocab_size=30, feature_dim=16, word_dim=8, embed_dim=12)
    feats = torch.randn(3, 16)
    img, txt = vsepp.encode_images(feats), vsepp.encode_captions(tokens, lengths)
    assert img.shape == txt.shape == (3, 12)
    assert torch.allclose(vsepp(feats, tokens, lengths), img @ txt.T)
    model = VSEModel(vocab_size=30, feature_dim=0, word_dim=8, embed_dim=12, cnn="small")
    pixels = torch.randint(0, 256, (3, 16, 16, 3), dtype=torch.uint8)
    assert torch.allclose(model.encode_images(pixels).norm(dim=1), torch.ones(3), atol=1e-5)


def test_vse_model_projects_regions_concatenated():
    """`regions` R: (B, R, D) features flattened row by row into one R·D vector, Xavier-uniform initialised
    over R·D + E and L2-normalised after the projection, as LSEH's released VSE++ precomp encoder does
    (`images.view(-1, 36 * 2048)`, then `fc`, then `l2norm`)."""
    model = VSEModel(vocab_size=30, feature_dim=4, word_dim=8, embed_dim=6, regions=3)
    assert model.feature_layout == "regions" and model.image_encoder.fc.in_features == 12
    assert model.image_encoder.fc.weight.abs().max() <= (6.0 / (12 + 6)) ** 0.5
    regions = torch.randn(5, 3, 4)
    expected = model.image_encoder.fc(regions.reshape(5, 12))
    expected = expected / expected.norm(dim=1, keepdim=True)
    assert torch.allclose(model.encode_images(regions), expected, atol=1e-6)
    assert VSEModel.layouts_for({"regions": 36}) == ("regions",)
    assert "regions" not in VSEModel.layouts_for({})
    with pytest.raises(ValueError, match="built for 3 regions per image, got 2"):
        model.encode_images(torch.randn(5, 2, 4))
    pooled = VSEModel(vocab_size=30, feature_dim=4, word_dim=8, embed_dim=6)
    with pytest.raises(ValueError, match=r"got regions \(5, 3, 4\): set model_params.regions"):
        pooled.encode_images(regions)
    with pytest.raises(ValueError, match="regions: a region count >= 0 for stored features"):
        VSEModel(vocab_size=30, feature_dim=0, word_dim=8, embed_dim=6, cnn="small", regions=3)


def test_cnn_encoder_rejects_channels_first():
    with pytest.raises(ValueError, match="images must be"):
        CNNImageEncoder("small", 8)(torch.zeros(2, 3, 16, 16, dtype=torch.uint8))


def test_tiny_cnn_is_the_small_cnn_at_half_width():
    tiny, dim = build_cnn("tiny")
    small, small_dim = build_cnn("small")
    assert (dim, small_dim) == (128, 256)
    assert tiny(torch.randn(2, 3, 64, 64)).shape == (2, 128)
    assert sum(p.numel() for p in tiny.parameters()) < sum(p.numel() for p in small.parameters()) / 3


def test_build_cnn_torchvision_without_download_and_unknown_name():
    model, dim = build_cnn("resnet18", weights=None)
    assert dim == 512
    assert model.eval()(torch.randn(1, 3, 32, 32)).shape == (1, 512)
    with pytest.raises(ValueError, match="cnn must be one of"):
        build_cnn("alexnet")
