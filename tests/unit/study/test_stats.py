"""Seed statistics against scipy on fixed numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from vse_ray.study.stats import paired_interval, t_interval

VALUES = [352.1, 349.8, 356.4, 351.0]
BASELINE = [348.0, 347.5, 350.9, 349.2]


@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_t_interval_matches_scipy(confidence):
    got = t_interval(VALUES, confidence)
    low, high = stats.t.interval(confidence, len(VALUES) - 1, np.mean(VALUES), stats.sem(VALUES))
    assert got.mean == pytest.approx(np.mean(VALUES))
    assert got.std == pytest.approx(np.std(VALUES, ddof=1))
    assert (got.low, got.high) == pytest.approx((low, high))


def test_paired_interval_matches_ttest_rel():
    got = paired_interval(VALUES, BASELINE)
    reference = stats.ttest_rel(VALUES, BASELINE).confidence_interval(0.95)
    assert (got.low, got.high) == pytest.approx((reference.low, reference.high))
    assert got.mean == pytest.approx(np.mean(np.subtract(VALUES, BASELINE)))
    assert got.excludes_zero  # every seed is ahead: 4.1, 2.3, 5.5, 1.8


def test_hand_computed_interval_and_noise():
    # differences 1, -1, 2: mean 2/3, s = sqrt(7/3), t_{0.975,2} = 4.302653
    got = paired_interval([3.0, 1.0, 5.0], [2.0, 2.0, 3.0])
    half = 4.302652729911275 * math.sqrt(7 / 3) / math.sqrt(3)
    assert (got.low, got.high) == pytest.approx((2 / 3 - half, 2 / 3 + half))
    assert not got.excludes_zero


def test_one_seed_has_no_interval_and_bad_input():
    one = t_interval([1.5])
    assert one.mean == 1.5 and math.isnan(one.std) and not one.excludes_zero
    with pytest.raises(ValueError, match="values"):
        t_interval([])
    with pytest.raises(ValueError, match="pair them"):
        paired_interval([1.0, 2.0], [1.0])
