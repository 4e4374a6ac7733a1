"""The optimiser and learning-rate schedule of a run, from its TrainConfig.

Adam (weight decay as an L2 term in the gradient, as `torch.optim.Adam`) or AdamW (decoupled decay, as the
VSE∞ and LSEH reference code), with parameter groups: `lr_groups` maps a parameter-name prefix to a multiplier
of `lr` (the first matching prefix wins; e.g. a pretrained BERT at 0.1×). The rate decays by `lr_factor`
after each epoch in `lr_milestones`, or every `lr_update` epochs when no milestones are given (VSE++).
"""

from __future__ import annotations

import torch
from torch import nn

from vse_ray.train.config import TrainConfig

OPTIMIZER_CLASSES = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW}


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
    cfg: TrainConfig, model: nn.Module
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.MultiStepLR]:
    """The run's optimiser over `model`'s parameter groups and its per-epoch schedule (`scheduler.step()`
    after each epoch)."""
    groups = parameter_groups(model, cfg.lr, cfg.lr_groups)
    optimizer = OPTIMIZER_CLASSES[cfg.optimizer](groups, lr=cfg.lr, weight_decay=cfg.weight_decay)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones(cfg), gamma=cfg.lr_factor)
    return optimizer, scheduler
