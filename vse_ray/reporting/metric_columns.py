"""Metric columns: short titles (``R_at_1_i2t`` → ``R@1 i2t``), one number style."""

from __future__ import annotations

import math

from vse_ray.metrics.registry import DIRECTIONS, scale_of
from vse_ray.reporting.table import Column


def metric_title(key: str) -> str:
    """Short header of a metric key: ``_at_`` becomes ``@`` and the direction suffix a separate word; the
    group of an MLflow name follows as words, validation left out (``test_scene/CS_at_100_i2t`` is
    ``CS@100 i2t test scene``, ``val/rsum`` is ``rsum``)."""
    group, _, name = key.rpartition("/")
    title = name.replace("_at_", "@")
    for direction in DIRECTIONS:
        if title.endswith(f"_{direction}"):
            title = f"{title.removesuffix(f'_{direction}')} {direction}"
            break
    words = [word for word in group.split("_") if word and word != "val"]
    return " ".join([title, *words])


def metric_number(value: float, key: str | None = None) -> str:
    """One decimal for percentages and ranks (R@K, rsum, med r), three for fractions (CS, NCS, τ, mAP).

    The scale is the one the metric of ``key`` declares when a key is given (`metrics.registry.scale_of`),
    so a column keeps one style (a recall of 9.6 is ``9.6``, not ``9.600``); without a key, it is read from
    the value (one decimal from 10 up).
    """
    if not math.isfinite(value):
        return "-"
    percent = scale_of(key) != "fraction" if key is not None else abs(value) >= 10
    return f"{value:.1f}" if percent else f"{value:.3f}"


def metric_column(key: str, title: str = "") -> Column:
    """The report column of metric ``key`` (title from ``metric_title`` unless given)."""
    return Column(key, title or metric_title(key), lambda value: metric_number(value, key))
