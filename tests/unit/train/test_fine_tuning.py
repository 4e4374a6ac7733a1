"""CLIP fine-tuning settings: the cosine schedule, weight-decay exclusion, per-tower and layer-wise rates,
locked and frozen image towers, autocast and gradient checkpointing, on tiny random towers."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from vse_ray.losses import make_loss
from vse_ray.models.clip import ClipModel
from vse_ray.train.batches import TrainBatch
from vse_ray.train.config import TrainConfig
from vse_ray.train.epoch_loop import train_step
from vse_ray.train.optim import LOSS_GROUP, NO_DECAY, build_optimizer, freeze_image
from vse_ray.train.precision import Precision


@pytest.fixture(scope="module")
def towers(tiny_clip):
    torch.manual_seed(0)
    return {name: ClipModel(**tiny_clip[name]) for name in ("open_clip", "hf")}


def _cfg(**kw) -> TrainConfig:
    return TrainConfig(data_dir="d", model="clip", optimizer="adamw", lr=1e-3, **kw).validate()


def _batch(model: ClipModel, n: int = 4) -> TrainBatch:
    rng = np.random.default_rng(0)
    images = torch.from_numpy(rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8))
    ids = model.caption_ids([], [f"a photo of thing {i}" for i in range(n)])
    tokens = torch.nn.utils.rnn.pad_sequence([torch.as_tensor(i) for i in ids], batch_first=True)
    lengths = torch.tensor([len(i) for i in ids])
    return TrainBatch(images, tokens, lengths, torch.arange(n), None)


def _step(model: ClipModel, cfg: TrainConfig, precision: str = "fp32") -> torch.Tensor:
    loss = make_loss("infonce")
    loss.start_from(model.learned_logits)
    optimizer, _ = build_optimizer(cfg, model, loss)
    return train_step(
        model, loss, optimizer, _batch(model), 2.0, precision=Precision(precision, torch.device("cpu"))
    )


def test_cosine_schedule_equals_the_formula():
    """open_clip's cosine_lr, written out: (s + 1) / w · lr in the warm-up, then ½(1 + cos(π e / E)) · lr."""
    net = torch.nn.Linear(2, 2)
    cfg = TrainConfig(data_dir="d", lr=0.1, epochs=3, lr_schedule="cosine", lr_warmup_steps=4).validate()
    optimizer, scheduler = build_optimizer(cfg, net, steps_per_epoch=5)
    got = []
    for _ in range(15):
        got.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    want = [
        0.1 * (s + 1) / 4 if s < 4 else 0.5 * (1 + math.cos(math.pi * (s - 4) / 11)) * 0.1 for s in range(15)
    ]
    assert got == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("backend", ["open_clip", "hf"])
def test_weight_decay_excludes_open_clips_rule(towers, backend):
    model = towers[backend]
    loss = make_loss("infonce")
    optimizer, _ = build_optimizer(_cfg(weight_decay=0.2, weight_decay_exclude=True), model, loss)
    names = {id(p): n for n, p in model.named_parameters()}
    no_decay = {
        names[id(p)]
        for g in optimizer.param_groups
        if g["weight_decay"] == 0.0
        for p in g["params"]
        if id(p) in names
    }
    want = {
        n
        for n, p in model.named_parameters()
        if p.ndim < 2 or any(k in n for k in ("bn", "ln", "bias", "logit_scale"))
    }
    assert no_decay == want and "towers.model.logit_scale" in want
    assert all(
        g["name"].endswith(NO_DECAY)
        for g in optimizer.param_groups
        if g["weight_decay"] == 0.0 and g["name"] != LOSS_GROUP
    )
    assert (
        optimizer.param_groups[-1]["name"] == LOSS_GROUP and optimizer.param_groups[-1]["weight_decay"] == 0.0
    )
    decayed = [g for g in optimizer.param_groups if g["weight_decay"] != 0.0]
    assert decayed and all(g["weight_decay"] == 0.2 for g in decayed)


@pytest.mark.parametrize("backend", ["open_clip", "hf"])
def test_rate_per_tower_with_layer_decay(towers, backend):
    model = towers[backend]
    optimizer, _ = build_optimizer(_cfg(lr_image=0.5, lr_text=2.0, layer_decay=0.8), model)
    lrs = {g["name"]: g["lr"] for g in optimizer.param_groups}
    groups = model.layer_groups()
    for tower, factor in (("image", 0.5), ("text", 2.0)):
        n = len(groups[tower])
        assert n == 4  # embeddings, block 0, block 1 with the final norm, projection
        for k in range(n):
            assert lrs[f"{tower}.{k}"] == pytest.approx(1e-3 * factor * 0.8 ** (n - 1 - k), rel=1e-12)
    assert lrs[""] == 1e-3  # the model's own logit scale
    grouped = {id(p) for g in optimizer.param_groups for p in g["params"]}
    assert grouped == {id(p) for p in model.parameters()}
    optimizer, _ = build_optimizer(_cfg(lr_image=0.5), model)  # no layer decay: a group per tower
    assert {g["name"]: g["lr"] for g in optimizer.param_groups} == {"image": 5e-4, "text": 1e-3, "": 1e-3}


@pytest.mark.parametrize("unlocked", [0, 1, 2, 4])
def test_lock_leaves_open_clips_unlocked_groups(tiny_clip, unlocked):
    model = ClipModel(**tiny_clip["open_clip"])
    reference = copy.deepcopy(model.towers.model)
    reference.lock_image_tower(unlocked_groups=unlocked)
    build_optimizer(_cfg(lock_image=True, lock_image_unlocked_groups=unlocked), model)
    ours = {n.removeprefix("towers.model.") for n, p in model.named_parameters() if p.requires_grad}
    assert ours == {n for n, p in reference.named_parameters() if p.requires_grad}


def test_locked_tower_gets_no_update(tiny_clip):
    torch.manual_seed(0)
    model = ClipModel(**tiny_clip["open_clip"])
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    _step(model, _cfg(lock_image=True, weight_decay=0.1))
    for name, param in model.named_parameters():
        if name != "towers.model.logit_scale":  # the loss learns its own copy
            moved = not torch.equal(before[name], param)
            assert moved == (not name.startswith("towers.model.visual.")), name


def test_frozen_image_epochs_stop_and_restart_the_tower(tiny_clip):
    torch.manual_seed(0)
    model = ClipModel(**tiny_clip["hf"])
    loss = make_loss("infonce")
    optimizer, _ = build_optimizer(_cfg(freeze_image_epochs=1, weight_decay=0.1, epochs=2), model, loss)
    image = [
        p
        for n, p in model.named_parameters()
        if n.startswith(("towers.model.vision_model", "towers.model.visual_"))
    ]
    for frozen in (True, False):
        freeze_image(optimizer, frozen)
        before = [p.detach().clone() for p in image]
        train_step(model, loss, optimizer, _batch(model), 2.0)
        moved = [not torch.equal(a, b) for a, b in zip(before, image, strict=True)]
        assert not any(moved) if frozen else all(moved)


@pytest.mark.parametrize("backend", ["open_clip", "hf"])
def test_gradient_checkpointing_gives_the_same_step(tiny_clip, backend):
    models = []
    for checkpointing in (False, True):
        torch.manual_seed(0)
        model = ClipModel(**tiny_clip[backend])
        if checkpointing:
            model.set_grad_checkpointing()
        model.train()
        _step(model, _cfg(weight_decay=0.1))
        models.append(model)
    for (name, a), b in zip(models[0].named_parameters(), models[1].parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7, msg=name)


def test_bf16_autocast_steps_on_the_cpu(tiny_clip):
    torch.manual_seed(0)
    model = ClipModel(**tiny_clip["open_clip"])
    value = _step(model, _cfg(precision="bf16"), "bf16")
    assert torch.isfinite(value) and value > 0


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"precision": "fp16"}, "precision: fp16 needs a GPU"),
        ({"precision": "fp8"}, "precision: must be one of"),
        ({"lr_schedule": "linear"}, "lr_schedule: must be one of"),
        ({"lr_warmup_steps": 10}, "lr_warmup_steps: needs lr_schedule cosine"),
        ({"lr_schedule": "cosine", "lr_warmup_steps": -1}, "lr_warmup_steps: must be an integer >= 0"),
        ({"lock_image_unlocked_groups": 2}, "lock_image_unlocked_groups: needs lock_image"),
        ({"layer_decay": 0}, r"layer_decay: must be a number in \(0, 1\]"),
        ({"lr_image": -1}, "lr_image: must be a finite multiplier"),
        ({"freeze_image_epochs": 30}, "freeze_image_epochs: must be below epochs"),
        ({"lock_image": True, "freeze_image_epochs": 1}, "freeze_image_epochs: the image tower is locked"),
        ({"model": "vsepp", "lr_text": 0.1}, "lr_text: a setting of the clip model's towers"),
        ({"model": "vsepp", "grad_checkpointing": True}, "grad_checkpointing: a setting of the clip"),
    ],
)
def test_bad_settings_get_one_line(overrides, message):
    kw = {"model": "clip", **overrides}
    with pytest.raises(ValueError, match=message) as err:
        TrainConfig(data_dir="d", **kw).validate()
    assert "\n" not in str(err.value)


def test_more_unlocked_groups_than_the_tower_has(tiny_clip):
    model = ClipModel(**tiny_clip["open_clip"])
    with pytest.raises(ValueError, match="lock_image_unlocked_groups: the image tower has 4 layer groups"):
        build_optimizer(_cfg(lock_image=True, lock_image_unlocked_groups=5), model)


def test_epoch_loop_steps_the_cosine_and_frozen_epochs(tiny_pixel_dir, tiny_clip, tmp_path):
    """Through the epoch loop: the cosine steps once per batch, the image tower waits out its frozen epoch."""
    from tests.support.local_reporter import LocalReporter
    from tests.support.tiny_store import tiny_config
    from vse_ray.checkpoint_files import load_checkpoint
    from vse_ray.train.epoch_loop import run_training
    from vse_ray.train.optim import cosine_factor

    cfg = tiny_config(
        tiny_pixel_dir,
        tmp_path,
        model="clip",
        loss="infonce",
        model_params=tiny_clip["hf"],
        epochs=2,
        train_images=8,
        optimizer="adamw",
        lr_schedule="cosine",
        lr_warmup_steps=1,
        freeze_image_epochs=1,
    )
    reporter = LocalReporter(tmp_path / "run")
    run_training(cfg.checked(), reporter)
    steps = 40 // cfg.batch_size  # 8 images, 5 captions each
    for metrics in reporter.history:  # the rate of the next step
        assert metrics["lr"] == pytest.approx(cfg.lr * cosine_factor(steps * metrics["epoch"], 1, 2 * steps))
    start = ClipModel(**tiny_clip["hf"]).state_dict()
    first, second = (load_checkpoint(path)["model"] for path in reporter.checkpoints)
    image = [k for k in start if k.startswith(("towers.model.vision_model.", "towers.model.visual_"))]
    assert all(torch.equal(first[k], start[k]) for k in image)
    assert not all(torch.equal(second[k], start[k]) for k in image)
