"""MLflow metric names: every key a run logs, grouped by prefix so that chart sections mean something.

An evaluation (:func:`vse_ray.metrics.evaluate_all`) returns flat keys such as ``rsum``, ``CS_at_100_i2t`` and
``CS_at_100_i2t_scene``. On MLflow they are grouped by the split (and protocol) they were scored on and the
relevance source of a suffixed key: ``val/rsum``, ``test/CS_at_100_i2t``, ``test_scene/CS_at_100_i2t``,
``test_coco1k/rsum``. MLflow names accept no ``@``, so ``_at_`` stays. Only the :data:`HEADLINE` keys (those
the metrics declare, :mod:`vse_ray.metrics.registry`) become MLflow metrics; the whole evaluation goes into
the run's report artifacts (``metrics.json``, ``evaluation/``). Training keys of an epoch go to ``train/``.
An evaluation scored by a recipe's paper protocol logs the paper's numbers under ``paper/`` + the run's key
(``paper/test_first1k-ncs_spice/NCS_at_1_i2t``), beside the run's own.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from vse_ray.metrics.registry import HEADLINE
from vse_ray.relevance.sources import ORACLE_SOURCES

VAL, TEST = "val", "test"
SUFFIXED_SOURCES = ORACLE_SOURCES  # sources whose evaluation keys end in `_<source>` (`evaluate_all`)
# Per-epoch keys that are not evaluation keys, and their MLflow names.
EPOCH_KEYS = {
    "train_loss": "train/loss",
    "lr": "train/lr",
    "collapsed": "train/collapsed",
    "logit_scale": "train/logit_scale",  # t = exp(ln t) of a loss that learns it (infonce, siglip)
    "logit_bias": "train/logit_bias",
    "time_total_s": "train/seconds",
    "val_step": "val/step",
}
# Set (1.0) on the epoch after which patience ends a run: the run is complete, not cut short (Tune's status).
PATIENCE_STOP = "patience_stop"
BEST_RSUM = "val/best_rsum"  # the selected snapshot's validation rsum; logged last by `record_checkpoint`
BEST_EPOCH = "val/best_epoch"
VAL_RSUM = "val/rsum"
TEST_RSUM = "test/rsum"
PAPER = (
    "paper"  # the prefix of a paper's numbers, logged beside an evaluation scored as the paper scored them
)


def group(split: str, protocol: str = "full") -> str:
    """The prefix of a split's keys: ``test``, or ``test_coco1k`` for another protocol than the full split."""
    return split if protocol == "full" else f"{split}_{protocol}"


def mlflow_key(key: str, split: str = VAL, protocol: str = "full") -> str:
    """MLflow name of evaluation key ``key``: ``test/rsum``, ``test_scene/CS_at_100_i2t``."""
    prefix = group(split, protocol)
    for source in SUFFIXED_SOURCES:
        if key.endswith(f"_{source}"):
            return f"{prefix}_{source}/{key.removesuffix(f'_{source}')}"
    return f"{prefix}/{key}"


def paper_key(name: str) -> str:
    """The MLflow name of the paper's number beside the run's metric ``name``: ``paper/test_first1k/rsum``."""
    return f"{PAPER}/{name}"


def evaluation_key(name: str, split: str = VAL, protocol: str = "full") -> str | None:
    """The evaluation key of MLflow metric ``name`` when it belongs to that split, else None."""
    head, slash, key = name.partition("/")
    prefix = group(split, protocol)
    if not slash:
        return None
    if head == prefix:
        return key
    for source in SUFFIXED_SOURCES:
        if head == f"{prefix}_{source}":
            return f"{key}_{source}"
    return None


def of_split(metrics: Mapping[str, float], split: str = VAL, protocol: str = "full") -> dict[str, float]:
    """The evaluation keys and values of one split among MLflow metrics (the inverse of :func:`headline`)."""
    found = {name: evaluation_key(name, split, protocol) for name in metrics}
    return {key: metrics[name] for name, key in found.items() if key is not None}


def headline(
    metrics: Mapping[str, Any], split: str = VAL, protocol: str = "full", keys: Iterable[str] = HEADLINE
) -> dict[str, float]:
    """The finite ``keys`` of an evaluation under their MLflow names."""
    return {
        mlflow_key(k, split, protocol): float(metrics[k])
        for k in keys
        if _finite(metrics.get(k)) and not isinstance(metrics[k], bool)
    }


def epoch_metrics(metrics: Mapping[str, Any]) -> dict[str, float]:
    """One epoch's MLflow metrics: its training keys and its headline validation keys."""
    named = {EPOCH_KEYS[k]: float(v) for k, v in metrics.items() if k in EPOCH_KEYS and _finite(v)}
    return {**named, **headline(metrics, VAL)}


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(float(value))
