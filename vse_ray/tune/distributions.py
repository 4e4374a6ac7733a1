"""One-key distribution specs of a search-space YAML and their Ray Tune domains."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ray import tune

KINDS = ("uniform", "loguniform", "quniform", "randint", "choice", "grid")


@dataclass(frozen=True)
class Distribution:
    """A sampled leaf: ``kind`` is one of ``KINDS``, ``args`` its YAML list (bounds, or the options)."""

    kind: str
    args: tuple

    def to_tune(self) -> Any:
        """The Ray Tune domain (``grid`` is ``tune.grid_search``: every option, ``num_samples`` times)."""
        if self.kind == "choice":
            return tune.choice(list(self.args))
        if self.kind == "grid":
            return tune.grid_search(list(self.args))
        return getattr(tune, self.kind)(*self.args)

    def corners(self) -> list:
        """Values that bound what a trial can draw: the range end points, or every option.

        ``randint``'s upper bound is exclusive (as in ``tune.randint``), so its corners are ``low, high - 1``.
        """
        if self.kind in ("choice", "grid"):
            return list(self.args)
        if self.kind == "randint":
            return [self.args[0], self.args[1] - 1]
        return [self.args[0], self.args[1]]


def is_distribution(value: Any) -> bool:
    """True for a one-key mapping whose key is a distribution kind, e.g. ``{"uniform": [0.1, 0.3]}``."""
    return isinstance(value, dict) and len(value) == 1 and next(iter(value)) in KINDS


def parse_distribution(value: dict, where: str) -> Distribution:
    """Check a ``{kind: args}`` leaf and return it as a ``Distribution``.

    Args:
        value: the YAML mapping, one key from ``KINDS``.
        where: the leaf's path, used in error messages (e.g. ``"params.loss_params.margin"``).

    Raises:
        ValueError: naming ``where`` for a malformed leaf or an impossible range
            (low >= high, loguniform bound <= 0, non-integer randint bounds, q <= 0, no options).
    """
    kind, args = next(iter(value.items()))
    if not isinstance(args, list) or not args:
        raise ValueError(f"{where}: '{kind}' needs a non-empty list, got {args!r}")
    if kind in ("choice", "grid"):
        return Distribution(kind, tuple(args))
    arity = 3 if kind == "quniform" else 2
    if len(args) != arity or not all(_is_number(a) for a in args):
        raise ValueError(f"{where}: '{kind}' needs {arity} numbers, got {args!r}")
    low, high = args[0], args[1]
    if not low < high:
        raise ValueError(f"{where}: '{kind}' range is empty: low={low} must be < high={high}")
    if kind == "loguniform" and low <= 0:
        raise ValueError(f"{where}: 'loguniform' needs low > 0, got {low}")
    if kind == "randint" and not all(isinstance(a, int) for a in args):
        raise ValueError(f"{where}: 'randint' bounds must be integers, got {args!r}")
    if kind == "quniform" and not args[2] > 0:
        raise ValueError(f"{where}: 'quniform' step q must be > 0, got {args[2]}")
    return Distribution(kind, tuple(args))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
