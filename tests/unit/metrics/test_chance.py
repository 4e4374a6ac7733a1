"""Chance levels of recall against a combinatorial reference."""

from __future__ import annotations

import pytest
from scipy.special import comb

from vse_ray.metrics.chance import chance_levels


@pytest.mark.parametrize(
    ("n_images", "per_image", "k"), [(250, 5, 1), (250, 5, 10), (20, 5, 5), (1000, 1, 10)]
)
def test_chance_recall_matches_hypergeometric(n_images, per_image, k):
    n = n_images * per_image
    expected_i2t = 100 * (1 - comb(n - per_image, k) / comb(n, k))  # P(some true caption in a random top K)
    chance = chance_levels(n_images, n, ks=(k,))
    assert chance[f"R_at_{k}_i2t"] == pytest.approx(expected_i2t)
    assert chance[f"R_at_{k}_t2i"] == pytest.approx(100 * k / n_images)
