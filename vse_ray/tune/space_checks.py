"""Checks a search space against the real training code before a sweep starts.

Names are checked against ``TrainConfig``'s fields and the loss constructor's signature; values by building
``TrainConfig`` (``validate()``, which builds the loss with ``make_loss``) at every corner of the space, so a
range the loss rejects (say a negative margin, or ``l_min > l_max``) fails here, not in trial 37.
"""

from __future__ import annotations

from typing import Any

from vse_ray.losses import LOSS_NAMES, loss_hparams
from vse_ray.train.config import CheckedConfig, TrainConfig, fields_where
from vse_ray.tune.search_space import SearchSpace


def tunable_fields() -> tuple[str, ...]:
    """``TrainConfig`` fields a space may set: the training settings (role "hyper")."""
    return fields_where("hyper")


def check_search_space(space: SearchSpace, base: dict[str, Any] | None = None) -> None:
    """Raise ValueError (naming the space file and key) if any trial of ``space`` could not start.

    Args:
        space: a parsed space.
        base: the sweep's fixed TrainConfig fields (``data_dir`` etc.) that overrides are merged over.
    """
    where = space.source
    if space.loss not in LOSS_NAMES:
        raise ValueError(f"{where}: loss {space.loss!r} is not one of {LOSS_NAMES}")
    allowed_fields = tunable_fields()
    allowed_loss = tuple(loss_hparams(space.loss))
    paths = set(space.leaves) | {p for alts in space.one_of.values() for alt in alts for p in alt}
    for path in sorted(paths):
        head, _, rest = path.partition(".")
        if head not in allowed_fields:
            raise ValueError(
                f"{where}: '{head}' is not a tunable TrainConfig field; tunable: {list(allowed_fields)}"
            )
        if head == "loss_params" and rest.split(".")[0] not in allowed_loss:
            raise ValueError(
                f"{where}: loss_params.{rest.split('.')[0]} is not a parameter of loss '{space.loss}'; "
                f"its parameters: {list(allowed_loss)}"
            )
    for overrides in space.corner_overrides():
        try:
            trial_config(space, overrides, base)
        except (ValueError, TypeError) as err:
            raise ValueError(f"{where}: a trial with {overrides} cannot start: {err}") from err


def trial_config(
    space: SearchSpace, overrides: dict[str, Any], base: dict[str, Any] | None = None
) -> CheckedConfig:
    """The checked ``TrainConfig`` of one trial: ``base`` fields, the space's loss, then ``overrides``."""
    fields = {"data_dir": "<data_dir>", **(base or {}), "loss": space.loss}
    loss_params = {**fields.get("loss_params", {}), **overrides.get("loss_params", {})}
    fields.update({k: v for k, v in overrides.items() if k != "loss_params"}, loss_params=loss_params)
    return TrainConfig.from_dict(fields).checked()
