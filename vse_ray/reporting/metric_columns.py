"""Metric columns: short titles (``R_at_1_i2t`` → ``R@1 i2t``), one number style."""

from __future__ import annotations

import math

from vse_ray.reporting.table import Column

DIRECTIONS = ("i2t", "t2i")


def metric_title(key: str) -> str:
    """Short header of a metric key: ``_at_`` becomes ``@`` and the direction suffix a separate word."""
    title = key.replace("_at_", "@")
    for direction in DIRECTIONS:
        if title.endswith(f"_{direction}"):
            return f"{title.removesuffix(f'_{direction}')} {direction}"
    return title


def metric_number(value: float) -> str:
    """One decimal from 10 up (recalls in percent, rsum), three below (CS/NCS fractions, losses)."""
    if not math.isfinite(value):
        return "-"
    return f"{value:.1f}" if abs(value) >= 10 else f"{value:.3f}"


def metric_column(key: str, title: str = "") -> Column:
    """The report column of metric ``key`` (title from ``metric_title`` unless given)."""
    return Column(key, title or metric_title(key), metric_number)
