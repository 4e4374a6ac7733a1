"""Statistics over seeds: mean, sample std, Student-t confidence intervals, paired differences."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class Interval:
    """Mean of n values, their sample standard deviation (ddof=1) and a two-sided t-interval of the mean.

    With n = 1 the std and the interval are NaN (one seed says nothing about the seed noise).
    """

    n: int
    mean: float
    std: float
    low: float
    high: float

    @property
    def excludes_zero(self) -> bool:
        """The interval lies entirely above or below 0 (False when it is undefined)."""
        return self.low > 0 or self.high < 0


def t_interval(values: Sequence[float], confidence: float = 0.95) -> Interval:
    """mean ± t_{(1+c)/2, n-1} · s / √n: the interval of `scipy.stats.t.interval(c, n-1, mean, sem)`."""
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"values: expected a non-empty 1-D sequence, got shape {x.shape}")
    mean = float(x.mean())
    if x.size == 1:
        return Interval(1, mean, math.nan, math.nan, math.nan)
    std = float(x.std(ddof=1))
    half = float(stats.t.ppf((1 + confidence) / 2, x.size - 1)) * std / math.sqrt(x.size)
    return Interval(int(x.size), mean, std, mean - half, mean + half)


def paired_interval(values: Sequence[float], baseline: Sequence[float], confidence: float = 0.95) -> Interval:
    """t-interval of the per-seed differences values[i] - baseline[i] (paired: same seed, same warm-up)."""
    a, b = np.asarray(values, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"paired values: {a.shape} against baseline {b.shape}; pair them by seed first")
    return t_interval((a - b).tolist(), confidence)
