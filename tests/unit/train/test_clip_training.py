"""A CLIP model in training: it reads the stored images without --finetune, and every loss takes a step."""

from __future__ import annotations

import pytest
import torch

from tests.support.tiny_store import tiny_config
from tests.support.training_steps import assert_one_step_learns
from vse_ray.data.store.readers import load_captions
from vse_ray.losses import LOSS_NAMES, make_loss
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


def test_ddp_steps_with_the_unused_logit_scale(loaded, tmp_path):
    """A hinge loss reads the similarities only: the checkpoint's logit scale gets no gradient, which DDP
    accepts for a model that says so (`find_unused_parameters`), step after step."""
    import torch.distributed as dist

    data, _ = loaded
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        model = build_model("clip", **data.model_args)
        net = torch.nn.parallel.DistributedDataParallel(
            model, find_unused_parameters=model.find_unused_parameters
        )
        images = torch.from_numpy(data.train_images.pixels[:4].copy())
        tokens = torch.nn.utils.rnn.pad_sequence(
            [torch.as_tensor(i) for i in model.caption_ids([], ["a red box"] * 4)], batch_first=True
        )
        lengths = torch.tensor([tokens.shape[1]] * 4)
        for _ in range(2):
            make_loss("vsepp").from_similarity(net(images, tokens, lengths)).backward()
        assert model.logit_scale.grad is None
    finally:
        dist.destroy_process_group()
