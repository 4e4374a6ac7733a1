"""The optimiser and learning-rate schedule of a run, from its TrainConfig.

Adam (weight decay as an L2 term in the gradient, as `torch.optim.Adam`) or AdamW (decoupled decay, as the
VSE∞ and LSEH reference code), with parameter groups: `lr_groups` maps a parameter-name prefix to a multiplier
of `lr` (the first matching prefix wins; e.g. a pretrained BERT at 0.1×).

Schedules: "step" decays the rate by `lr_factor` after each epoch in `lr_milestones`, or every `lr_update`
epochs when no milestones are given (VSE++); "cosine" is open_clip's ``cosine_lr`` (per step: a linear
warm-up over `lr_warmup_steps`, then half a cosine period from the rate to 0 at the last step; Loshchilov &
Hutter, "SGDR", ICLR 2017, eq. 5 without restarts).

A CLIP model's towers (`layer_groups`) train in a group per tower, or per layer group: the tower's multiplier
(`lr_image`, `lr_text`) times `layer_decay`^(n - 1 - k) for group k of its n (layer-wise decay, as BEiT
and ELECTRA fine-tune). `lock_image` freezes the image tower but its last `lock_image_unlocked_groups`
groups (LiT, as open_clip's ``lock_image_tower``). `weight_decay_exclude` applies open_clip's rule: no
weight decay on 1-D parameters and on names with "bn", "ln", "bias" or "logit_scale".

A loss with learned parameters of its own (the logit scale and bias of `infonce` and `siglip`) trains them
in a last group named "loss", at `lr` and without weight decay (open_clip excludes the logit scale and bias
from weight decay).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from vse_ray.train.config import TrainConfig

OPTIMIZER_CLASSES = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW}
LOSS_GROUP = "loss"  # the group of the loss's own learned parameters, always the last
IMAGE_TOWER = "image"  # the group of a CLIP model's image tower ("image"; per layer: "image.0", ...)
NO_DECAY = "/no_decay"  # the suffix of a group's parameters without weight decay

Scheduler = torch.optim.lr_scheduler.LRScheduler


def excluded_from_decay(name: str, param: nn.Parameter) -> bool:
    """open_clip's rule for parameters without weight decay: 1-D (biases, norm gains, the class token, the
    logit scale), or a name of a batch norm, layer norm, bias or the logit scale."""
    return param.ndim < 2 or any(part in name for part in ("bn", "ln", "bias", "logit_scale"))


def _tower_rates(cfg: TrainConfig, model: nn.Module) -> dict[str, tuple[str, float]]:
    """Parameter name → (group name, multiplier of `lr`) for a model with tower layer groups; the image
    tower's locked parameters stop requiring a gradient."""
    groups_of = getattr(model, "layer_groups", None)
    if groups_of is None:
        return {}
    towers: dict[str, list[list[str]]] = groups_of()
    image = towers["image"]
    if cfg.lock_image:
        unlocked = cfg.lock_image_unlocked_groups
        if unlocked > len(image):
            raise ValueError(
                f"lock_image_unlocked_groups: the image tower has {len(image)} layer groups, got {unlocked}"
            )
        params = dict(model.named_parameters())
        for group in image[: len(image) - unlocked]:
            for name in group:
                params[name].requires_grad_(False)
    factors = {"image": cfg.lr_image, "text": cfg.lr_text}
    rates: dict[str, tuple[str, float]] = {}
    for tower, groups in towers.items():
        for k, group in enumerate(groups):
            factor = factors[tower] * cfg.layer_decay ** (len(groups) - 1 - k)
            # one group per tower when its layers share a rate (fewer groups: a faster optimiser step)
            key = f"{tower}.{k}" if cfg.layer_decay != 1 else tower
            rates.update({name: (key, factor) for name in group})
    return rates


def parameter_groups(cfg: TrainConfig, model: nn.Module) -> list[dict]:
    """Trainable parameters split by the first prefix of `lr_groups` their name starts with (in the given
    order), then by tower layer group (a CLIP model), each group with its own learning rate; the rest form a
    group at `lr`. With `weight_decay_exclude`, each group's excluded parameters form a group of their own
    without weight decay. Empty groups are dropped; a prefix that matches no parameter is an error (a
    misspelt one would silently train at `lr`). A multiplier of 0 freezes its parameters, as the reference
    code's frozen CNN (VSE++ without fine-tuning, whose BatchNorm statistics still move in training mode)."""
    rates = _tower_rates(cfg, model)
    lr_groups = cfg.lr_groups
    found = {prefix: False for prefix in lr_groups}
    keyed: dict[tuple[str, float, bool], list[nn.Parameter]] = {}
    for name, param in model.named_parameters():
        prefix = next((p for p in lr_groups if name.startswith(p)), None)
        if prefix is not None:
            found[prefix] = True
            if lr_groups[prefix] == 0:
                param.requires_grad_(False)  # frozen: no gradient, no optimiser state, outside the clipping
        if not param.requires_grad:
            continue
        group, factor = (prefix, lr_groups[prefix]) if prefix is not None else rates.get(name, ("", 1.0))
        no_decay = cfg.weight_decay_exclude and excluded_from_decay(name, param)
        keyed.setdefault((group, factor, no_decay), []).append(param)
    unused = [prefix for prefix, hit in found.items() if not hit]
    if unused:
        raise ValueError(f"lr_groups: no parameter name starts with {unused[0]!r}")
    order = {prefix: i for i, prefix in enumerate(lr_groups)}
    out = []
    # the lr_groups first, in their order; the tower groups; the rest last (as the loss group follows it)
    for (group, factor, no_decay), params in sorted(
        keyed.items(), key=lambda kv: (order.get(kv[0][0], len(order)), kv[0][0] == "", kv[0][2])
    ):
        entry: dict[str, Any] = {"params": params, "lr": cfg.lr * factor, "name": group}
        if no_decay:
            entry |= {"weight_decay": 0.0, "name": group + NO_DECAY}
        out.append(entry)
    return out


def milestones(cfg: TrainConfig) -> list[int]:
    """Epochs after which the learning rate decays."""
    if cfg.lr_milestones:
        return list(cfg.lr_milestones)
    return list(range(cfg.lr_update, cfg.epochs + 1, cfg.lr_update))


def cosine_factor(step: int, warmup_steps: int, total_steps: int) -> float:
    """The multiplier of the rate at `step` (from 0) of `total_steps`: (step + 1) / warmup_steps during the
    warm-up, then 0.5 · (1 + cos(π · e / E)) with e the steps since the warm-up and E the steps after it."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    after = max(total_steps - warmup_steps, 1)
    return 0.5 * (1 + math.cos(math.pi * (step - warmup_steps) / after))


def per_step(cfg: TrainConfig) -> bool:
    """Whether the schedule steps after each optimiser step (cosine) rather than after each epoch."""
    return cfg.lr_schedule == "cosine"


def build_optimizer(
    cfg: TrainConfig, model: nn.Module, loss: nn.Module | None = None, steps_per_epoch: int = 1
) -> tuple[torch.optim.Optimizer, Scheduler]:
    """The run's optimiser over `model`'s parameter groups (and the learned parameters of `loss`, if any, in
    the last group) and its schedule: `scheduler.step()` after each epoch ("step") or after each optimiser
    step ("cosine", over `cfg.epochs` × `steps_per_epoch` steps)."""
    groups = parameter_groups(cfg, model)
    learned = [] if loss is None else [p for p in loss.parameters() if p.requires_grad]
    if learned:
        groups.append({"params": learned, "lr": cfg.lr, "weight_decay": 0.0, "name": LOSS_GROUP})
    # foreach: each group's update in a few multi-tensor kernels, as torch does by default on a GPU; on the
    # CPU its default loops over the tensors in Python. The same update to the bit, faster (performance.md)
    optimizer = OPTIMIZER_CLASSES[cfg.optimizer](
        groups, lr=cfg.lr, weight_decay=cfg.weight_decay, foreach=True
    )
    scheduler: Scheduler
    if per_step(cfg):
        total = cfg.epochs * steps_per_epoch
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda step: cosine_factor(step, cfg.lr_warmup_steps, total)
        )
    else:
        scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones(cfg), gamma=cfg.lr_factor)
    return optimizer, scheduler


def freeze_image(optimizer: torch.optim.Optimizer, frozen: bool) -> None:
    """Stop (or restart) the training of the image tower's groups (`freeze_image_epochs`): a parameter
    without a gradient gets no update, no weight decay and no optimiser state."""
    for group in optimizer.param_groups:
        if group["name"].split(NO_DECAY)[0].split(".")[0] == IMAGE_TOWER:
            for param in group["params"]:
                param.requires_grad_(not frozen)


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
