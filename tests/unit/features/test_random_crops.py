"""VSE++ "RC": random resized crops against RandomResizedCrop's sampling law, flips, the encoder's modes."""

from __future__ import annotations

import math

import torch

from vse_ray.features.random_crops import centre_crops, crop_boxes, random_resized_crops
from vse_ray.models import build_model


def test_boxes_follow_the_law():
    g = torch.Generator().manual_seed(0)
    boxes = crop_boxes(20000, 64, 48, g)
    w, h = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    assert (boxes[:, 0] >= 0).all() and (boxes[:, 1] >= 0).all()
    assert (boxes[:, 2] <= 48).all() and (boxes[:, 3] <= 64).all()
    area = w * h / (64 * 48)
    assert area.min() >= 0.08 * 0.9 and area.max() <= 1.0
    ratio = (w / h).log()
    inside = (ratio > math.log(3 / 4) - 0.1) & (ratio < math.log(4 / 3) + 0.1)
    assert inside.float().mean() > 0.99
    # accepted area fractions are uniform on [0.08, 1] but for the draws that did not fit: median near 0.5
    assert 0.4 < area.median() < 0.6


def test_whole_box_is_the_image_and_flip_mirrors():
    images = torch.arange(2 * 3 * 4 * 4, dtype=torch.float32).reshape(2, 3, 4, 4)
    g = torch.Generator().manual_seed(1)
    crops = random_resized_crops(images, 4, g)
    assert crops.shape == (2, 3, 4, 4)
    assert torch.equal(centre_crops(images, 2), images[..., 1:3, 1:3])


def test_rc_trains_on_crops_and_evaluates_the_centre():
    model = build_model(
        "vsepp", vocab_size=10, feature_dim=0, embed_dim=8, cnn="tiny", feature_norm=True, crop=24
    )
    pixels = torch.randint(0, 255, (3, 32, 32, 3), dtype=torch.uint8)
    model.eval()
    a, b = model.encode_images(pixels), model.encode_images(pixels)
    assert torch.equal(a, b) and a.shape == (3, 8)
    model.train()
    torch.manual_seed(0)
    c = model.encode_images(pixels)
    torch.manual_seed(1)
    assert not torch.allclose(c, model.encode_images(pixels))
