"""open_clip's random resized crop of the training images: torchvision's draws and resize, per row."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from tests.support.local_reporter import LocalReporter
from tests.support.tiny_store import tiny_config
from vse_ray.data.synthetic.dataset import synthetic_image
from vse_ray.losses import make_loss
from vse_ray.models.clip import ClipModel
from vse_ray.train.config import TrainConfig, merge_overrides
from vse_ray.train.epoch_loop import run_training
from vse_ray.train.image_crop import OPEN_CLIP_SCALE, RATIO, crop_box, random_resized_crops


@pytest.fixture(scope="module")
def images() -> torch.Tensor:
    return torch.from_numpy(np.stack([synthetic_image(0, i, 32) for i in range(6)]))


def test_each_row_equals_torchvisions_random_resized_crop(images):
    from torchvision.transforms import InterpolationMode, v2

    torch.manual_seed(11)
    crop = v2.RandomResizedCrop(32, scale=(0.5, 1.0), interpolation=InterpolationMode.BICUBIC, antialias=True)
    expected = torch.stack([crop(row.permute(2, 0, 1)) for row in images]).permute(0, 2, 3, 1)
    ours = random_resized_crops(images, (0.5, 1.0), torch.Generator().manual_seed(11))
    assert torch.equal(ours, expected)
    assert not torch.equal(ours[0], images[0])  # rows are cropped, each by its own box
    assert len({crop_box(32, 32, (0.5, 1.0), RATIO, torch.Generator().manual_seed(s)) for s in range(6)}) > 1


def test_draws_are_torchvisions_get_params_and_open_clips_transform_is_that_crop(images):
    """The boxes are those of torchvision's ``RandomResizedCrop.get_params`` (open_clip's train transform)
    from the same seed; open_clip's transform of the PIL image is our crop, normalised, within a level."""
    import open_clip
    from PIL import Image
    from torchvision.transforms import RandomResizedCrop

    torch.manual_seed(5)
    theirs = [
        RandomResizedCrop.get_params(images[0].permute(2, 0, 1), [0.9, 1.0], list(RATIO)) for _ in range(8)
    ]
    generator = torch.Generator().manual_seed(5)
    assert [crop_box(32, 32, OPEN_CLIP_SCALE, RATIO, generator) for _ in range(8)] == theirs

    train = open_clip.image_transform(32, is_train=True)
    assert train.transforms[0].scale == OPEN_CLIP_SCALE and tuple(train.transforms[0].ratio) == RATIO
    torch.manual_seed(7)
    reference = torch.stack([train(Image.fromarray(row.numpy())) for row in images])
    cropped = random_resized_crops(images, OPEN_CLIP_SCALE, torch.Generator().manual_seed(7))
    mean = torch.tensor(open_clip.OPENAI_DATASET_MEAN)[:, None, None]
    std = torch.tensor(open_clip.OPENAI_DATASET_STD)[:, None, None]
    ours = (cropped.permute(0, 3, 1, 2).float() / 255 - mean) / std
    assert (ours - reference).abs().max() <= 1.01 / 255 / std.min()


def test_crops_part_multi_positive_from_hard_targets(tiny_clip, images):
    """Two captions of one image: without a crop the two image rows tie and multi-positive InfoNCE equals
    the hard one; cropped apart, they differ."""
    torch.manual_seed(0)
    model = ClipModel(**tiny_clip["open_clip"])
    batch = images[[0, 0, 1, 2]]
    ids = torch.from_numpy(np.stack(model.caption_ids([], ["a red ball", "red ball", "a box", "a tree"])))
    image_ids = torch.tensor([0, 0, 1, 2])
    hard, multi = make_loss("infonce", targets="hard"), make_loss("infonce", targets="multi")

    def losses(pixels: torch.Tensor) -> tuple[float, float]:
        with torch.no_grad():
            sims = model(pixels, ids, torch.full((4,), ids.shape[1]))
        return tuple(float(f.from_similarity(sims, image_ids=image_ids).detach()) for f in (hard, multi))

    plain = losses(batch)
    assert plain[0] == pytest.approx(plain[1], rel=1e-6)
    cropped = losses(random_resized_crops(batch, (0.5, 1.0), torch.Generator().manual_seed(0)))
    assert abs(cropped[0] - cropped[1]) > 1e-4


def test_a_clip_run_crops_its_training_images(tiny_pixel_dir, tiny_clip, tmp_path):
    """`image_crop_scale` reaches the epoch: the same run with crops trains to another loss; validation
    reads the images as stored (both runs' epoch-0 state is the same)."""
    base = tiny_config(
        tiny_pixel_dir, tmp_path, model="clip", loss="infonce", epochs=1, model_params=tiny_clip["open_clip"]
    )
    losses = []
    for scale in ((), (0.5, 1.0)):
        reporter = LocalReporter(tmp_path / f"run{len(losses)}")
        run_training(dataclasses.replace(base, image_crop_scale=scale).checked(), reporter)
        losses.append(reporter.history[-1]["train_loss"])
    assert losses[0] != losses[1]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"image_crop_scale": (0.9,)}, "image_crop_scale: expected [low, high]"),
        ({"image_crop_scale": (1.0, 0.9)}, "image_crop_scale: expected [low, high]"),
        ({"image_crop_scale": (0.9, 1.0), "model": "vsepp"}, "image_crop_scale: a setting of the clip model"),
        (
            {"image_crop_scale": (0.9, 1.0), "lock_image": True, "image_cache": True},
            "image_crop_scale: the image cache holds one embedding per stored image",
        ),
    ],
)
def test_bad_crop_settings_are_refused(fields, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[")):
        TrainConfig(data_dir="d", **{"model": "clip", **fields}).validate()


def test_the_setting_reads_from_set_and_round_trips():
    fields = merge_overrides({"model": "clip", "data_dir": "d"}, ["image_crop_scale=[0.9, 1.0]"])
    cfg = TrainConfig.from_dict(fields).validate()
    assert cfg.image_crop_scale == (0.9, 1.0) and TrainConfig.from_dict(cfg.to_dict()) == cfg
