"""The run's optimiser: parameter groups by name prefix, Adam vs AdamW weight decay, decay milestones."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from vse_ray.train.config import TrainConfig
from vse_ray.train.optim import LOSS_GROUP, build_optimizer, load_optimizer_state, milestones


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.text_encoder = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 2))
        self.image_encoder = nn.Linear(4, 2)


def _cfg(**kw) -> TrainConfig:
    return TrainConfig(data_dir="d", **kw).validate()


def test_groups_by_first_matching_prefix():
    net = _Net()
    opt, _ = build_optimizer(_cfg(lr=1e-3, lr_groups={"text_encoder.0.": 0.1, "text_encoder.": 0.5}), net)
    lrs = {g["name"]: (g["lr"], len(g["params"])) for g in opt.param_groups}
    assert lrs == {"text_encoder.0.": (1e-4, 2), "text_encoder.": (5e-4, 2), "": (1e-3, 2)}


def test_unknown_prefix_is_an_error():
    with pytest.raises(ValueError, match="bert"):
        build_optimizer(_cfg(lr_groups={"bert.": 0.1}), _Net())


@pytest.mark.parametrize("name", ["adam", "adamw"])
def test_one_step_equals_the_torch_optimiser(name):
    torch.manual_seed(0)
    net, ref = _Net(), _Net()
    ref.load_state_dict(net.state_dict())
    cfg = _cfg(optimizer=name, lr=1e-2, weight_decay=0.1, lr_groups={"image_encoder.": 0.1})
    opt, _ = build_optimizer(cfg, net)
    cls = torch.optim.AdamW if name == "adamw" else torch.optim.Adam
    ref_opt = cls(
        [{"params": ref.image_encoder.parameters(), "lr": 1e-3}, {"params": ref.text_encoder.parameters()}],
        lr=1e-2,
        weight_decay=0.1,
    )
    x = torch.randn(5, 4)
    for model, optimizer in ((net, opt), (ref, ref_opt)):
        optimizer.zero_grad()
        model.text_encoder(model.image_encoder(x)[:, :1].repeat(1, 3)).square().sum().backward()
        optimizer.step()
    for a, b in zip(net.parameters(), ref.parameters(), strict=True):
        assert torch.equal(a, b)


def test_schedule_decays_at_milestones_or_every_lr_update():
    assert milestones(_cfg(epochs=30, lr_update=10)) == [10, 20, 30]
    assert milestones(_cfg(epochs=30, lr_milestones=(15, 25))) == [15, 25]
    opt, sched = build_optimizer(_cfg(epochs=4, lr=1.0, lr_update=2, lr_factor=0.5), _Net())
    seen = []
    for _ in range(4):
        seen.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert seen == [1.0, 1.0, 0.5, 0.5]


def test_a_zero_multiplier_freezes_the_parameters():
    net = _Net()
    opt, _ = build_optimizer(_cfg(lr_groups={"image_encoder.": 0.0}), net)
    assert [g["name"] for g in opt.param_groups] == [""]
    assert not any(p.requires_grad for p in net.image_encoder.parameters())


def test_a_loss_with_learned_parameters_trains_them_last_without_weight_decay():
    from vse_ray.losses import make_loss

    net, loss = _Net(), make_loss("siglip")
    opt, _ = build_optimizer(_cfg(lr=1e-3, weight_decay=0.1), net, loss)
    assert [g["name"] for g in opt.param_groups] == ["", LOSS_GROUP]
    assert opt.param_groups[-1]["params"] == [loss.logit_scale, loss.logit_bias]
    assert opt.param_groups[-1]["weight_decay"] == 0.0 and opt.param_groups[-1]["lr"] == 1e-3
    assert [g["name"] for g in build_optimizer(_cfg(), net, make_loss("vsepp"))[0].param_groups] == [""]


@pytest.mark.parametrize(
    ("saved_loss", "own_loss"), [("vsepp", "siglip"), ("infonce", "siglip"), ("siglip", "vsepp")]
)
def test_optimizer_state_of_another_losss_run_restores_the_model_groups(saved_loss, own_loss):
    from vse_ray.losses import make_loss

    net = _Net()
    saved_opt, _ = build_optimizer(_cfg(), net, make_loss(saved_loss))
    sum(p.sum() for p in net.parameters()).backward()
    saved_opt.step()
    own, _ = build_optimizer(_cfg(), net, make_loss(own_loss))
    load_optimizer_state(own, saved_opt.state_dict())
    for param in net.parameters():
        assert torch.equal(own.state[param]["exp_avg"], saved_opt.state[param]["exp_avg"])
    assert [g["name"] for g in own.param_groups][-1] == (LOSS_GROUP if own_loss == "siglip" else "")
    same, _ = build_optimizer(_cfg(), net, make_loss(saved_loss))
    load_optimizer_state(same, saved_opt.state_dict())  # a resumed run: every group as saved
    assert same.state_dict()["param_groups"] == saved_opt.state_dict()["param_groups"]
