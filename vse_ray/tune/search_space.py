"""Search-space YAML files (``tune_spaces/*.yaml``): parsing, structure checks, Tune param space, overrides.

A space file holds::

    loss: ladder_auto            # a name from vse_ray.losses.LOSS_NAMES
    metric: rsum                 # optional, reported metric to optimise (default rsum)
    mode: max                    # optional, max or min (default max)
    params:                      # TrainConfig fields; loss_params = keyword arguments of make_loss(loss, ...)
      lr: {loguniform: [1.0e-4, 1.0e-3]}
      loss_params:
        margins: [0.2, {uniform: [0.005, 0.05]}]   # a list is a tuple whose items may be sampled
    one_of:                      # optional: per group, one alternative (a params tree) is drawn per trial
      levels:
        - {loss_params: {l_min: 2, l_max: 2}}
        - {loss_params: {l_min: 2, l_max: 4}}

Leaves are constants or one distribution: ``uniform``, ``loguniform``, ``quniform`` ([low, high, q]),
``randint`` ([low, high), high exclusive), ``choice`` or ``grid`` (every option, ``num_samples`` times).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from ray import tune

from vse_ray.resources import load_yaml, shown_keys
from vse_ray.tune.distributions import Distribution, is_distribution, parse_distribution

TOP_LEVEL_KEYS = ("loss", "metric", "mode", "params", "one_of")
ONE_OF_PREFIX = "one_of."


class _SpaceLoader(yaml.SafeLoader):
    """Safe YAML loader that also reads ``1e-4`` as a float (YAML 1.2 rule; PyYAML alone reads a string)."""


_SpaceLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)[eE][-+]?\d+$"),
    list("-+0123456789."),
)


@dataclass(frozen=True)
class SearchSpace:
    """A parsed space: ``leaves`` maps dotted paths (``loss_params.margins.1``) to constants or Distributions.

    Attributes:
        loss: loss family name passed to ``make_loss``.
        metric: the per-epoch reported metric the sweep optimises.
        mode: ``"max"`` or ``"min"``.
        leaves: the ``params`` tree, flattened.
        one_of: group name -> list of alternatives, each a flattened tree like ``leaves``.
        source: the file it came from (for error messages).
    """

    loss: str
    metric: str = "rsum"
    mode: str = "max"
    leaves: dict[str, Any] = field(default_factory=dict)
    one_of: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    source: str = "<space>"

    def param_space(self) -> dict[str, Any]:
        """Flat Ray Tune ``param_space``: one entry per sampled leaf, one ``choice`` per ``one_of`` group."""
        space: dict[str, Any] = {
            p: v.to_tune() for p, v in self.leaves.items() if isinstance(v, Distribution)
        }
        for group, alternatives in self.one_of.items():
            space[ONE_OF_PREFIX + group] = tune.choice(list(range(len(alternatives))))
            for i, alt in enumerate(alternatives):
                for path, value in alt.items():
                    if isinstance(value, Distribution):
                        space[f"{ONE_OF_PREFIX}{group}.{i}.{path}"] = value.to_tune()
        return space

    def grid_size(self) -> int:
        """Trials per sample: the product of the ``grid`` leaves' option counts (Tune crosses every grid)."""
        leaves = [
            *self.leaves.values(),
            *(v for alts in self.one_of.values() for alt in alts for v in alt.values()),
        ]
        return math.prod(len(v.args) for v in leaves if isinstance(v, Distribution) and v.kind == "grid")

    def tuned_params(self) -> set[str]:
        """Names of the flat TrainConfig params the space sets (``lr``, ``loss.margins``, ...)."""
        paths = set(self.leaves) | {p for alts in self.one_of.values() for alt in alts for p in alt}
        heads = {tuple(p.split(".")[:2]) for p in paths}
        return {f"loss.{h[1]}" if h[0] == "loss_params" and len(h) > 1 else h[0] for h in heads}

    def overrides(self, sample: dict[str, Any]) -> dict[str, Any]:
        """TrainConfig overrides (nested: ``{"lr": ..., "loss_params": {...}}``) for one Tune trial config."""
        flat = {p: sample[p] if isinstance(v, Distribution) else v for p, v in self.leaves.items()}
        for group, alternatives in self.one_of.items():
            i = sample[ONE_OF_PREFIX + group]
            for path, value in alternatives[i].items():
                flat[path] = (
                    sample[f"{ONE_OF_PREFIX}{group}.{i}.{path}"] if isinstance(value, Distribution) else value
                )
        return unflatten(flat)

    def corner_overrides(self) -> list[dict[str, Any]]:
        """Overrides at the edges of the space: a check over them sees every bound and option at least once.

        For each alternative of each ``one_of`` group (other groups at their first alternative), every sampled
        leaf is moved to each of its corners in turn while the others sit at their first corner.
        """
        choices: list[tuple[str | None, int]] = [
            (g, i) for g, alts in self.one_of.items() for i in range(len(alts))
        ]
        choices = choices or [(None, 0)]
        settings: dict[str, dict[str, Any]] = {}
        for group, index in choices:
            leaves = dict(self.leaves)
            for other, alternatives in self.one_of.items():
                leaves.update(alternatives[index if other == group else 0])
            base = {p: _first(v) for p, v in leaves.items()}
            moves: list[tuple[str | None, Any]] = [
                (p, c) for p, v in leaves.items() if isinstance(v, Distribution) for c in v.corners()
            ]
            for path, corner in moves or [(None, None)]:
                setting = unflatten({**base, **({path: corner} if path else {})})
                settings.setdefault(repr(setting), setting)
        return list(settings.values())


def load_search_space(path: str | Path) -> SearchSpace:
    """Read and schema-check a space YAML given by path or shipped name (``ladder_auto``).

    Checks structure and ranges; ``check_search_space`` checks the names.

    Raises:
        ValueError: naming the file and the offending key for unknown top-level keys, a missing ``loss``,
            a bad ``mode``, a malformed distribution, an impossible range, or an empty ``one_of`` group;
            an unknown file or name.
    """
    found, raw = load_yaml("space", path, _SpaceLoader)
    return parse_search_space(raw, source=str(found))


def parse_search_space(raw: Any, source: str = "<space>") -> SearchSpace:
    """Build a ``SearchSpace`` from the loaded YAML mapping (see the module docstring for the format)."""
    if not isinstance(raw, dict):
        raise ValueError(
            f"{source}: a space is a mapping with keys {TOP_LEVEL_KEYS}, got {type(raw).__name__}"
        )
    unknown = sorted(set(raw) - set(TOP_LEVEL_KEYS))
    if unknown:
        raise ValueError(
            f"{source}: unknown top-level key(s) {shown_keys(unknown)}; allowed: {list(TOP_LEVEL_KEYS)}"
        )
    if not isinstance(raw.get("loss"), str):
        raise ValueError(f"{source}: 'loss' (a loss family name) is required")
    mode = raw.get("mode", "max")
    if mode not in ("max", "min"):
        raise ValueError(f"{source}: 'mode' must be 'max' or 'min', got {mode!r}")
    one_of_raw = raw.get("one_of") or {}
    if not isinstance(one_of_raw, dict):
        raise ValueError(f"{source}: 'one_of' maps a group name to a list of alternatives")
    one_of = {}
    for group, alternatives in one_of_raw.items():
        if not isinstance(alternatives, list) or not alternatives:
            raise ValueError(f"{source}: one_of.{group} must be a non-empty list of params trees")
        one_of[group] = [
            _flatten_tree(alt, f"{source}: one_of.{group}[{i}]") for i, alt in enumerate(alternatives)
        ]
    leaves = _flatten_tree(raw.get("params") or {}, f"{source}: params")
    _check_disjoint(leaves, one_of, source)
    return SearchSpace(
        loss=raw["loss"],
        metric=str(raw.get("metric", "rsum")),
        mode=mode,
        leaves=leaves,
        one_of=one_of,
        source=source,
    )


def unflatten(flat: dict[str, Any]) -> dict[str, Any]:
    """``{"loss_params.margins.1": 0.01}`` -> nested dicts, with integer-keyed levels turned into lists."""
    tree: dict[str, Any] = {}
    for path, value in flat.items():
        node = tree
        *parents, last = path.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return _lists_from_int_keys(tree)


def _flatten_tree(tree: Any, where: str, prefix: str = "") -> dict[str, Any]:
    if not isinstance(tree, dict):
        raise ValueError(f"{where}: expected a mapping of parameter names, got {tree!r}")
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if not isinstance(key, str) or not key or "." in key:
            raise ValueError(f"{where}.{path}: parameter names are non-empty strings without dots")
        flat.update(_flatten_value(value, f"{where}.{path}", path))
    return flat


def _flatten_value(value: Any, where: str, path: str) -> dict[str, Any]:
    if is_distribution(value):
        return {path: parse_distribution(value, where)}
    if isinstance(value, dict):
        return _flatten_tree(value, where, prefix=f"{path}.")
    if isinstance(value, list) and any(is_distribution(v) or isinstance(v, (dict, list)) for v in value):
        flat = {}
        for i, item in enumerate(value):
            flat.update(_flatten_value(item, f"{where}[{i}]", f"{path}.{i}"))
        return flat
    return {path: value}


def _check_disjoint(leaves: dict[str, Any], one_of: dict[str, list[dict[str, Any]]], source: str) -> None:
    seen = {p: "params" for p in leaves}
    for group, alternatives in one_of.items():
        for path in {p for alt in alternatives for p in alt}:
            clash = next((s for s in seen if _overlaps(s, path)), None)
            if clash is not None:
                raise ValueError(
                    f"{source}: one_of.{group} sets '{path}', already set by {seen[clash]} ('{clash}')"
                )
        seen.update({p: f"one_of.{group}" for alt in alternatives for p in alt})


def _overlaps(a: str, b: str) -> bool:
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def _first(value: Any) -> Any:
    return value.corners()[0] if isinstance(value, Distribution) else value


def _lists_from_int_keys(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    node = {k: _lists_from_int_keys(v) for k, v in node.items()}
    if node and all(k.isdigit() for k in node):
        if sorted(int(k) for k in node) != list(range(len(node))):
            raise ValueError(f"list positions must be 0..n-1, got {sorted(node)}")
        return [node[str(i)] for i in range(len(node))]
    return node
