"""`vse-ray pretrain-clip` on a pool of 8 scenes, one step: an open_clip local-dir checkpoint, reused."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch

from vse_ray.models.clip import ClipModel
from vse_ray.train.clip_pretrain import SETTINGS_FILE, pretrain_clip
from vse_ray.train.pretrain_settings import PretrainSettings

TINY = PretrainSettings(
    arch="clip-tiny.json", pool_images=8, exclude_images=40, epochs=1, batch_size=8, warmup_steps=1
)


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    out = tmp_path_factory.mktemp("pretrain") / "ckpt"
    lines: list[str] = []
    summary = pretrain_clip(out, TINY, log=lines.append)
    return out, summary, lines


def test_writes_a_local_dir_checkpoint_that_clip_reads(pretrained):
    out, summary, lines = pretrained
    assert summary["steps"] == 1 and len(summary["epoch_loss"]) == 1
    assert any(line.startswith("pretrain-clip: epoch 1/1 step 1/1 loss") for line in lines)  # progress
    model = ClipModel(pretrained=str(out))  # as `--set model_params.pretrained=OUT` builds it
    assert float(model.logit_scale.detach()) == pytest.approx(summary["logit_scale"])
    torch.manual_seed(TINY.seed)
    start = ClipModel(arch="clip-tiny.json")  # the towers the pretraining started from
    trained, initial = model.state_dict(), start.state_dict()
    assert trained.keys() == initial.keys()
    assert not torch.equal(trained["towers.model.visual.proj"], initial["towers.model.visual.proj"])
    images = torch.from_numpy(np.load(out / "pool" / "images.npy")[:4])
    assert model.encode_images(images).shape == (4, 32)


def test_a_rerun_reuses_it_and_other_settings_are_refused(pretrained):
    out, summary, _ = pretrained
    lines: list[str] = []
    assert pretrain_clip(out, TINY, log=lines.append) == summary
    assert lines == [f"pretrain-clip: {out} holds this checkpoint already (settings {TINY.key()})"]
    with pytest.raises(ValueError, match=f"{SETTINGS_FILE}: a checkpoint of other settings \\(epochs\\)"):
        pretrain_clip(out, dataclasses.replace(TINY, epochs=2))
    assert json.loads((out / SETTINGS_FILE).read_text())["key"] == TINY.key()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"batch_size": 9}, "batch_size 9 exceeds the pool's 8 images"),
        ({"crop_scale": (0.0, 1.0)}, "crop_scale: expected 0 < low <= high <= 1"),
        ({"epochs": 0}, "epochs: must be >= 1"),
    ],
)
def test_bad_settings_are_refused(fields, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        dataclasses.replace(TINY, **fields).check()
