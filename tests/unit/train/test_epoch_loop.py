"""The plain-PyTorch epoch loop on the tiny folder: learning, reporting, exact resume, NaN guard."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from tests.support.local_reporter import LocalReporter
from vse_ray.checkpoint_files import load_checkpoint, save_checkpoint
from vse_ray.models import build_model
from vse_ray.tracking.metric_keys import PATIENCE_STOP
from vse_ray.train import epoch_loop
from vse_ray.train.epoch_loop import NonFiniteLossError, run_training


def _run(cfg, tmp_path, name, start_state=None) -> LocalReporter:
    reporter = LocalReporter(tmp_path / name)
    run_training(cfg.checked(), reporter, start_state)
    return reporter


def test_learns_and_reports_every_epoch(tiny_cfg, tmp_path):
    rep = _run(tiny_cfg, tmp_path, "a")
    assert [m["epoch"] for m in rep.history] == [1, 2, 3]
    losses = [m["train_loss"] for m in rep.history]
    assert losses[-1] < losses[0]
    # 20 val images: chance R@10 t2i is 50 %, chance rsum about 285; the tiny classes are learnable.
    assert rep.history[-1]["R_at_10_t2i"] > 70 and rep.history[-1]["rsum"] > 350
    assert {"CS_at_5_i2t", "NCS_at_5_t2i", "rsum", "lr"} <= set(rep.history[-1])
    assert len(rep.checkpoints) == 3
    state = load_checkpoint(rep.checkpoints[-1])
    assert state["epoch"] == 3 and [m["epoch"] for m in state["history"]] == [1, 2, 3]


def test_resume_from_checkpoint_is_exact(tiny_cfg, tmp_path):
    straight = _run(tiny_cfg, tmp_path, "straight")
    first = _run(dataclasses.replace(tiny_cfg, epochs=1), tmp_path, "first")
    resumed = _run(tiny_cfg, tmp_path, "resumed", load_checkpoint(first.checkpoints[0]))
    assert [m["epoch"] for m in resumed.history] == [2, 3]
    assert resumed.history == straight.history[1:]


@pytest.mark.parametrize("loss", ["sam", "ladder", "lseh"])
def test_graded_losses_get_their_batch_relevance(tiny_cfg, tmp_path, loss):
    rep = _run(dataclasses.replace(tiny_cfg, loss=loss, epochs=1), tmp_path, loss)
    hist = load_checkpoint(rep.checkpoints[0])["relevance_hist"]
    n_batches = 480 // tiny_cfg.batch_size
    assert hist["source"] == {"sam": "cider", "ladder": "sbert", "lseh": "svd"}[loss]
    assert sum(hist["counts"]) == n_batches * tiny_cfg.batch_size**2


def test_finetune_from_raw_images(tiny_cfg, tmp_path):
    cfg = dataclasses.replace(tiny_cfg, finetune=True, cnn="small", cnn_weights=None, epochs=1)
    rep = _run(cfg, tmp_path, "ft")
    assert load_checkpoint(rep.checkpoints[0])["model_args"]["cnn"] == "small"


class _NaNAtStep:
    """Wraps a loss and returns NaN at one global step."""

    def __init__(self, loss, at: int):
        self.loss, self.at, self.calls = loss, at, 0
        self.relevance_source = loss.relevance_source

    def to(self, device):
        return self

    def __getattr__(self, name):  # the rest of the loss's interface (parameters, state_dict, ...)
        return getattr(self.loss, name)

    def from_similarity(self, *args, **kwargs):
        self.calls += 1
        value = self.loss.from_similarity(*args, **kwargs)
        return value * float("nan") if self.calls == self.at else value


def test_nan_loss_names_epoch_step_and_loss(tiny_cfg, tmp_path, monkeypatch):
    real = epoch_loop.make_loss
    monkeypatch.setattr(epoch_loop, "make_loss", lambda name, **kw: _NaNAtStep(real(name, **kw), at=30 + 2))
    with pytest.raises(NonFiniteLossError, match=r"loss is nan at epoch 2, step 2 \(loss 'vsepp'\)"):
        _run(tiny_cfg, tmp_path, "nan")


def test_train_step_skips_update_on_nonfinite_loss(tiny_cfg):
    model = torch.nn.Linear(2, 2)
    before = model.weight.detach().clone()
    opt = torch.optim.SGD(model.parameters(), lr=1.0)

    class Batch:
        images, tokens, lengths, image_ids, relevance, region_keep = (
            torch.ones(2, 2),
            None,
            None,
            None,
            None,
            None,
        )

    class InfLoss:
        def from_similarity(self, sims, **kwargs):
            return sims.sum() * float("inf")

    loss = epoch_loop.train_step(lambda images, tokens, lengths: model(images), InfLoss(), opt, Batch, 2.0)
    assert not torch.isfinite(loss) and torch.equal(model.weight, before)


def test_warmup_epochs_train_with_the_sum_of_hinges(tiny_cfg, tmp_path):
    cfg = dataclasses.replace(tiny_cfg, epochs=2)
    warm = _run(dataclasses.replace(cfg, warmup_epochs=1), tmp_path, "warm")
    vse0 = _run(dataclasses.replace(cfg, loss="vse0", epochs=1), tmp_path, "vse0")
    plain = _run(cfg, tmp_path, "plain")
    assert warm.history[0] == vse0.history[0]
    assert warm.history[0]["train_loss"] != plain.history[0]["train_loss"]


@pytest.mark.parametrize("lr_update", [15, 2])  # 2: the decay falls after the warm-up run has ended
def test_shared_warmup_checkpoint_gives_the_same_run(tiny_cfg, tmp_path, lr_update):
    cfg = dataclasses.replace(tiny_cfg, warmup_epochs=1, lr_update=lr_update)
    straight = _run(cfg, tmp_path, "straight")
    warmup = _run(dataclasses.replace(cfg, loss="vse0", epochs=1), tmp_path, "warmup")
    shared = _run(dataclasses.replace(cfg, init_checkpoint=str(warmup.checkpoints[0])), tmp_path, "shared")
    assert [m["epoch"] for m in shared.history] == [2, 3]
    assert shared.history == straight.history[1:]


def test_a_warmup_of_one_ray_train_worker_serves_a_run_in_process(tiny_cfg, tmp_path):
    warm = dataclasses.replace(tiny_cfg, warmup_epochs=1, loss="vse0", epochs=1, num_workers=1)
    path = str(_run(warm, tmp_path, "warmup").checkpoints[0])
    run = dataclasses.replace(tiny_cfg, warmup_epochs=1, init_checkpoint=path)
    for workers in (0, None):  # in this process; a trial's process: both train one worker's numbers
        assert epoch_loop.warmup_state(dataclasses.replace(run, num_workers=workers))["epoch"] == 1
    with pytest.raises(ValueError, match=r"trained with other \['num_workers'\]"):
        epoch_loop.warmup_state(dataclasses.replace(run, num_workers=2))  # DDP: other global batches


def test_init_checkpoint_from_another_run_is_refused(tiny_cfg, tmp_path):
    warmup = _run(dataclasses.replace(tiny_cfg, epochs=1, warmup_epochs=1), tmp_path, "warmup")
    other = dataclasses.replace(
        tiny_cfg, warmup_epochs=1, lr=1e-3, init_checkpoint=str(warmup.checkpoints[0])
    )
    with pytest.raises(ValueError, match=r"trained with other \['lr'\]"):
        _run(other, tmp_path, "other")
    longer = _run(dataclasses.replace(tiny_cfg, epochs=2, warmup_epochs=1), tmp_path, "longer")
    late = dataclasses.replace(tiny_cfg, warmup_epochs=1, init_checkpoint=str(longer.checkpoints[1]))
    with pytest.raises(ValueError, match="epoch 2 is past warmup_epochs 1"):
        _run(late, tmp_path, "late")


def test_init_weights_starts_a_second_stage_with_other_settings(tiny_cfg, tmp_path):
    """Stage 2 takes stage 1's model weights only: its own lr, epochs counted from 1, a fresh optimiser."""
    stage1 = _run(dataclasses.replace(tiny_cfg, epochs=1), tmp_path, "stage1")
    weights = str(stage1.checkpoints[0])
    stage2_cfg = dataclasses.replace(tiny_cfg, epochs=1, lr=2e-5, init_weights=weights)
    stage2 = _run(stage2_cfg, tmp_path, "stage2")
    fresh = _run(dataclasses.replace(stage2_cfg, init_weights=""), tmp_path, "fresh")
    assert [m["epoch"] for m in stage2.history] == [1]
    assert stage2.history[0]["lr"] == pytest.approx(2e-5)
    assert stage2.history[0]["train_loss"] < fresh.history[0]["train_loss"]  # from trained weights
    assert load_checkpoint(stage2.checkpoints[0])["config"]["init_weights"] == weights


def test_load_init_weights_copies_the_weights_and_refuses_another_shape(tiny_cfg, tmp_path):
    stage1 = _run(dataclasses.replace(tiny_cfg, epochs=1), tmp_path, "stage1")
    saved = load_checkpoint(stage1.checkpoints[0])
    model = build_model(saved["model_name"], **saved["model_args"])
    epoch_loop.load_init_weights(model, str(stage1.checkpoints[0]))
    assert all(torch.equal(model.state_dict()[k], v) for k, v in saved["model"].items())
    wider = build_model(saved["model_name"], **{**saved["model_args"], "embed_dim": 8})
    with pytest.raises(ValueError, match=r"init_weights .*: '[\w.]+' has shape \[\d+(, \d+)*\] there and"):
        epoch_loop.load_init_weights(wider, str(stage1.checkpoints[0]))


def test_init_weights_of_a_vse_inf_run_without_the_mask_row(tmp_path):
    """A VSE∞ checkpoint made before the model always held `<mask>` (one embedding row less) starts every
    weight but that row, which keeps its drawn value; two rows less is another vocabulary, refused."""
    args = {"vocab_size": 9, "feature_dim": 6, "word_dim": 4, "embed_dim": 8}
    old = build_model("vse_inf", **args).state_dict()
    state = {"epoch": 1, "optimizer": {}, "scheduler": {}, "config": {}, "history": []}
    save_checkpoint(tmp_path / "old", {**state, "model_name": "vse_inf", "model_args": args, "model": old})
    model = build_model("vse_inf", **{**args, "vocab_size": 10})
    drawn = model.text_encoder.embed.weight.detach().clone()
    epoch_loop.load_init_weights(model, str(tmp_path / "old"))
    ours, key = model.state_dict(), "text_encoder.embed.weight"
    assert torch.equal(ours[key], torch.cat([old[key], drawn[-1:]]))
    assert all(torch.equal(ours[k], v) for k, v in old.items() if k != key)
    with pytest.raises(ValueError, match=r"'text_encoder\.embed\.weight' has shape \[9, 4\] there"):
        epoch_loop.load_init_weights(
            build_model("vse_inf", **{**args, "vocab_size": 11}), str(tmp_path / "old")
        )


def test_a_run_on_stored_features_starts_a_model_with_the_cnn_in_the_loop(tiny_cfg, tmp_path):
    """The ladder code's fine-tuning: stage 1 read precomputed features, stage 2 runs the CNN; the projection
    and text side come from stage 1, the CNN keeps the weights it was built with."""
    stage1 = _run(dataclasses.replace(tiny_cfg, epochs=1), tmp_path, "stage1")
    saved = load_checkpoint(stage1.checkpoints[0])
    assert saved["model_name"] == "vsepp" and "image_encoder.fc.weight" in saved["model"]
    in_loop = {**saved["model_args"], "cnn": "tiny", "feature_norm": True, "crop": 24}
    cnn_dim = build_model("vsepp", **in_loop).image_encoder.proj.fc.in_features
    # stage 1 on stored features as wide as the tiny CNN's (the tiny store's are narrower)
    saved["model"] = build_model("vsepp", **{**saved["model_args"], "feature_dim": cnn_dim}).state_dict()
    save_checkpoint(tmp_path / "stored", saved)
    torch.manual_seed(0)
    model = build_model("vsepp", **in_loop)
    cnn_before = {k: v.clone() for k, v in model.state_dict().items() if k.startswith("image_encoder.cnn.")}
    epoch_loop.load_init_weights(model, str(tmp_path / "stored"))
    ours = model.state_dict()
    assert torch.equal(ours["image_encoder.proj.fc.weight"], saved["model"]["image_encoder.fc.weight"])
    assert torch.equal(ours["image_encoder.proj.fc.bias"], saved["model"]["image_encoder.fc.bias"])
    assert all(torch.equal(ours[k], v) for k, v in saved["model"].items() if k.startswith("text_encoder."))
    assert cnn_before and all(torch.equal(ours[k], v) for k, v in cnn_before.items())
    with pytest.raises(ValueError, match=r"'image_encoder\.proj\.fc\.weight' has shape \[32, 32\] there"):
        epoch_loop.load_init_weights(model, str(stage1.checkpoints[0]))  # stored features of another width


def test_ladder_trains_on_scene_relevance_with_a_quantile_threshold(tiny_cfg, tmp_path):
    params = {"relevance_source": "scene", "theta_quantile": 0.8}
    rep = _run(dataclasses.replace(tiny_cfg, loss="ladder", loss_params=params, epochs=1), tmp_path, "scene")
    hist = load_checkpoint(rep.checkpoints[0])["relevance_hist"]
    assert hist["source"] == "scene"
    assert sum(hist["counts"]) == 480 // tiny_cfg.batch_size * tiny_cfg.batch_size**2
    metrics = rep.history[0]
    assert math.isfinite(metrics["train_loss"])
    for key in ("CS_at_5_i2t_scene", "CS_at_10_t2i_scene", "tau_i2t_scene", "NCS_at_5_t2i_scene"):
        assert -1.0 <= metrics[key] <= 1.0, key


def test_validation_inside_epochs_selects_the_best_point(tiny_cfg, tmp_path):
    from vse_ray.models.registry import rebuild_model

    rep = _run(dataclasses.replace(tiny_cfg, epochs=2, val_every=1, val_images=10), tmp_path, "steps")
    assert all("val_step" in m for m in rep.history)
    for path, metrics in zip(rep.checkpoints, rep.history, strict=True):
        state = load_checkpoint(path)
        assert (state["selected_model"] is None) == (metrics["val_step"] == 0)
        rebuild_model(state)  # the selected weights load into the model


def test_step_validation_keeps_the_best_point():
    from vse_ray.train.step_validation import StepValidation

    scores = iter([10.0, 30.0, 20.0])
    net = torch.nn.Linear(2, 2)
    points = StepValidation(2, lambda: {"rsum": next(scores)})
    for step in range(1, 7):
        with torch.no_grad():
            net.weight.fill_(step)
        points.after_step(step, net)
    metrics, weights = points.select({"rsum": 25.0})
    assert metrics == {"rsum": 30.0, "val_step": 4} and float(weights["weight"][0, 0]) == 4
    assert points.select({"rsum": 5.0}) == ({"rsum": 5.0, "val_step": 0}, None)


def test_patience_stops_when_val_rsum_stops_improving(tiny_cfg, tmp_path):
    from vse_ray.train.epoch_loop import epochs_without_gain

    assert epochs_without_gain([{"rsum": 1}, {"rsum": 3}, {"rsum": 2}, {"rsum": 3}]) == 2
    frozen = dataclasses.replace(tiny_cfg, epochs=5, patience=1, lr=1e-12)  # val rsum never improves
    history = _run(frozen, tmp_path, "stop").history
    assert [m["epoch"] for m in history] == [1, 2]
    assert [m.get(PATIENCE_STOP) for m in history] == [None, 1.0]  # the last epoch says why it is the last
    warm = dataclasses.replace(frozen, warmup_epochs=3)  # no stop inside the warm-up
    assert [m["epoch"] for m in _run(warm, tmp_path, "warm").history] == [1, 2, 3, 4]


def test_a_resumed_start_that_does_not_fit_the_model_is_one_line():
    """A run's checkpoint from before VSE∞ always held `<mask>` (one embedding row less) cannot be resumed
    (its optimiser state has that shape too): one line naming the mismatch and the way out."""
    args = {"vocab_size": 9, "feature_dim": 6, "word_dim": 4, "embed_dim": 8}
    old = build_model("vse_inf", **args).state_dict()
    model = build_model("vse_inf", **{**args, "vocab_size": 10})
    with pytest.raises(ValueError, match=r"text_encoder\.embed\.weight.*--new-run") as err:
        epoch_loop.load_start_weights(model, old)
    assert "\n" not in str(err.value)
