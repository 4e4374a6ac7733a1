"""Reduction of per-query values to one number."""

from __future__ import annotations

import warnings

import numpy as np


def nan_mean(values: np.ndarray) -> float:
    """Mean over the defined (non-NaN) entries; NaN, without a warning, when none is defined."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(np.nanmean(values))
