"""The contrastive losses in the epoch loop: the learned logit scale is trained, checkpointed, resumed and
started from a model's own value; a shared warm-up checkpoint of another loss starts it afresh; the
shuffled-relevance control runs with the graded targets."""

from __future__ import annotations

import dataclasses
import math

import pytest

from tests.support.local_reporter import LocalReporter
from vse_ray.checkpoint_files import load_checkpoint
from vse_ray.models import MODELS
from vse_ray.train.epoch_loop import run_training
from vse_ray.train.optim import LOSS_GROUP


def _run(cfg, tmp_path, name, start_state=None) -> LocalReporter:
    reporter = LocalReporter(tmp_path / name)
    run_training(cfg.checked(), reporter, start_state)
    return reporter


def _scale(reporter: LocalReporter, epoch: int = -1) -> float:
    return load_checkpoint(reporter.checkpoints[epoch])["loss"]["logit_scale"].item()


@pytest.fixture()
def clip_cfg(tiny_cfg):
    return dataclasses.replace(tiny_cfg, loss="infonce", epochs=2)


def test_logit_scale_trains_saves_and_resumes_exactly(clip_cfg, tmp_path):
    straight = _run(clip_cfg, tmp_path, "straight")
    assert _scale(straight, 0) != pytest.approx(math.log(1 / 0.07), abs=1e-6)
    state = load_checkpoint(straight.checkpoints[0])
    assert state["optimizer"]["param_groups"][-1]["name"] == LOSS_GROUP
    assert state["optimizer"]["param_groups"][-1]["weight_decay"] == 0.0
    first = _run(dataclasses.replace(clip_cfg, epochs=1), tmp_path, "first")
    resumed = _run(clip_cfg, tmp_path, "resumed", load_checkpoint(first.checkpoints[0]))
    assert resumed.history == straight.history[1:]
    assert _scale(resumed) == _scale(straight)
    assert straight.history[-1]["logit_scale"] == pytest.approx(math.exp(_scale(straight)))


def test_siglip_trains_its_scale_and_bias(tiny_cfg, tmp_path):
    rep = _run(dataclasses.replace(tiny_cfg, loss="siglip", epochs=1), tmp_path, "siglip")
    loss_state = load_checkpoint(rep.checkpoints[0])["loss"]
    assert loss_state["logit_bias"].item() != -10.0
    assert loss_state["logit_scale"].item() != pytest.approx(math.log(10), abs=1e-6)


def test_logit_scale_starts_from_the_models_value(clip_cfg, tmp_path, monkeypatch):
    model_class = MODELS[clip_cfg.model]
    monkeypatch.setattr(model_class, "learned_logits", {"logit_scale": 1.0}, raising=False)
    cfg = dataclasses.replace(clip_cfg, epochs=1)
    assert _scale(_run(cfg, tmp_path, "model")) == pytest.approx(1.0, abs=0.05)  # moved a little
    fixed = dataclasses.replace(cfg, loss_params={"model_scale": False})
    assert _scale(_run(fixed, tmp_path, "fixed")) == pytest.approx(math.log(1 / 0.07), abs=0.05)


def test_shared_warmup_checkpoint_of_another_loss_gives_the_same_run(clip_cfg, tmp_path):
    cfg = dataclasses.replace(clip_cfg, warmup_epochs=1)
    straight = _run(cfg, tmp_path, "straight")
    warmup = _run(dataclasses.replace(cfg, loss="vse0", epochs=1), tmp_path, "warmup")
    shared = _run(dataclasses.replace(cfg, init_checkpoint=str(warmup.checkpoints[0])), tmp_path, "shared")
    assert shared.history == straight.history[1:]
    assert _scale(shared) == _scale(straight)


@pytest.mark.parametrize("loss", ["infonce", "siglip"])
def test_shuffled_control_runs_with_graded_targets(tiny_cfg, tmp_path, loss):
    graded = dataclasses.replace(tiny_cfg, loss=loss, epochs=1, loss_params={"targets": "graded"})
    plain = _run(graded, tmp_path, "plain")
    shuffled = _run(dataclasses.replace(graded, shuffle_relevance=True), tmp_path, "shuffled")
    assert shuffled.history[0]["train_loss"] != plain.history[0]["train_loss"]
    hard = dataclasses.replace(graded, loss_params={}, shuffle_relevance=True)
    with pytest.raises(ValueError, match="shuffle_relevance: needs a loss whose relevance"):
        _run(hard, tmp_path, "hard")
