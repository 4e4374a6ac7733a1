"""A CLIP model in training: it reads the stored images without --finetune, and every loss takes a step."""

from __future__ import annotations

import pytest
import torch

from tests.support.tiny_store import tiny_config
from tests.support.training_steps import assert_one_step_learns
from vse_ray.data.store.readers import load_captions
from vse_ray.losses import LOSS_NAMES
from vse_ray.models import build_model
from vse_ray.train.preflight import check_training
from vse_ray.train.training_data import TrainingData


@pytest.fixture(scope="module")
def loaded(tiny_pixel_dir, tiny_clip, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    cfg = tiny_config(tiny_pixel_dir, out, model="clip", loss="sam", model_params=tiny_clip["hf"])
    check_training(cfg.checked())  # the layout (pixels, no --finetune needed) and the checkpoint's files
    return TrainingData.load(cfg, "cider"), load_captions(str(tiny_pixel_dir), "train")


def test_clip_reads_the_stored_images(loaded):
    data, _ = loaded
    assert data.train_images.raw and data.val.images.raw
    assert "cnn" not in data.model_args


@pytest.mark.parametrize("loss_name", LOSS_NAMES)
def test_every_loss_trains_a_clip_model(loaded, loss_name):
    data, captions = loaded
    torch.manual_seed(0)
    assert_one_step_learns(build_model("clip", **data.model_args), loss_name, data, captions)
