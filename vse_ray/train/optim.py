"""The optimiser and learning-rate schedule of a run, from its TrainConfig.

Adam (weight decay as an L2 term in the gradient, as `torch.optim.Adam`) or AdamW (decoupled decay, as the
VSE∞ and LSEH reference code), with parameter groups: `lr_groups` maps a parameter-name prefix to a multiplier
of `lr` (the first matching prefix wins; e.g. a pretrained BERT at 0.1×). The rate decays by `lr_factor`
after each epoch in `lr_milestones`, or every `lr_update` epochs when no milestones are given (VSE++).

A loss with learned parameters of its own (the logit scale and bias of `infonce` and `siglip`) trains them
in a last group named "loss", at `lr` and without weight decay (open_clip excludes the logit scale and bias
from weight decay).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from vse_ray.train.config import TrainConfig

OPTIMIZER_CLASSES = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW}
LOSS_GROUP = "loss"  # the group of the loss's own learned parameters, always the last


def parameter_groups(model: nn.Module, lr: float, lr_groups: dict[str, float]) -> list[dict]:
    """Trainable parameters split by the first prefix of `lr_groups` their name starts with (in the given
    order), each group with its own learning rate; the rest form the last group at `lr`. Empty groups are
    dropped; a prefix that matches no parameter is an error (a misspelt one would silently train at `lr`).
    A multiplier of 0 freezes its parameters, as the reference code's frozen CNN (VSE++ without fine-tuning,
    whose BatchNorm statistics still move in training mode)."""
    named = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
    groups: dict[str, list[nn.Parameter]] = {prefix: [] for prefix in lr_groups}
    rest: list[nn.Parameter] = []
    for name, param in named:
        prefix = next((p for p in lr_groups if name.startswith(p)), None)
        (groups[prefix] if prefix is not None else rest).append(param)
    unused = [prefix for prefix, params in groups.items() if not params]
    if unused:
        raise ValueError(f"lr_groups: no parameter name starts with {unused[0]!r}")
    for prefix in [p for p, factor in lr_groups.items() if factor == 0]:
        for param in groups.pop(prefix):
            param.requires_grad_(False)  # frozen: no gradient, no optimiser state, outside the clipping
    out = [
        {"params": params, "lr": lr * lr_groups[prefix], "name": prefix} for prefix, params in groups.items()
    ]
    if rest:
        out.append({"params": rest, "lr": lr, "name": ""})
    return out


def milestones(cfg: TrainConfig) -> list[int]:
    """Epochs after which the learning rate decays."""
    if cfg.lr_milestones:
        return list(cfg.lr_milestones)
    return list(range(cfg.lr_update, cfg.epochs + 1, cfg.lr_update))


def build_optimizer(
    cfg: TrainConfig, model: nn.Module, loss: nn.Module | None = None
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.MultiStepLR]:
    """The run's optimiser over `model`'s parameter groups (and the learned parameters of `loss`, if any, in
    the last group) and its per-epoch schedule (`scheduler.step()` after each epoch)."""
    groups = parameter_groups(model, cfg.lr, cfg.lr_groups)
    learned = [] if loss is None else [p for p in loss.parameters() if p.requires_grad]
    if learned:
        groups.append({"params": learned, "lr": cfg.lr, "weight_decay": 0.0, "name": LOSS_GROUP})
    optimizer = OPTIMIZER_CLASSES[cfg.optimizer](groups, lr=cfg.lr, weight_decay=cfg.weight_decay)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones(cfg), gamma=cfg.lr_factor)
    return optimizer, scheduler


def load_optimizer_state(optimizer: torch.optim.Optimizer, saved: dict[str, Any]) -> None:
    """Restore `saved` (an optimiser's ``state_dict``) into `optimizer`.

    A shared warm-up checkpoint (`init_checkpoint`) comes from a run of another loss, whose learned
    parameters (the "loss" group) may differ from this run's: the model's groups are then restored and this
    run's loss group starts afresh (no loss of a warm-up checkpoint has trained, the warm-up loss did)."""
    theirs = [g for g in saved["param_groups"] if g.get("name") != LOSS_GROUP]
    own = [g for g in optimizer.state_dict()["param_groups"] if g.get("name") == LOSS_GROUP]
    saved_loss = [len(g["params"]) for g in saved["param_groups"] if g.get("name") == LOSS_GROUP]
    if saved_loss == [len(g["params"]) for g in own]:
        optimizer.load_state_dict(saved)  # the same groups (a resumed run)
        return
    kept = {i for g in theirs for i in g["params"]}  # the model's groups come first: ids 0 .. n - 1
    state = {i: v for i, v in saved["state"].items() if i in kept}
    optimizer.load_state_dict({"state": state, "param_groups": theirs + own})
