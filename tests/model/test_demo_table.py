"""Demo comparison table: chance levels against a combinatorial reference, layout and claim lines."""

from __future__ import annotations

import pytest
from scipy.special import comb

from vse_ray.demo.table import chance_levels, claim_checks, comparison_table


@pytest.mark.parametrize(
    ("n_images", "per_image", "k"), [(250, 5, 1), (250, 5, 10), (20, 5, 5), (1000, 1, 10)]
)
def test_chance_recall_matches_hypergeometric(n_images, per_image, k):
    n = n_images * per_image
    expected_i2t = 100 * (1 - comb(n - per_image, k) / comb(n, k))  # P(some true caption in a random top K)
    chance = chance_levels(n_images, n, ks=(k,))
    assert chance[f"R_at_{k}_i2t"] == pytest.approx(expected_i2t)
    assert chance[f"R_at_{k}_t2i"] == pytest.approx(100 * k / n_images)


def test_table_rows_columns_and_claims():
    results = {
        "vsepp": {"R_at_1_i2t": 30.0, "rsum": 300.0, "CS_at_100_i2t": 0.1},
        "ladder": {"R_at_1_i2t": 29.0, "rsum": 295.0, "CS_at_100_i2t": 0.3},
    }
    table = comparison_table(results, {"R_at_1_i2t": 2.0, "rsum": 12.0})
    lines = table.splitlines()
    assert lines[0].split() == ["loss", "R@1", "i2t", "rsum", "CS@100", "i2t"]
    assert [line.split()[0] for line in lines[2:]] == ["vsepp", "ladder", "(chance)"]
    assert "0.300" in lines[3] and "-" not in lines[3].split()
    assert claim_checks(results) == ["      ladder vs vsepp: rsum -5.0; CS_at_100_i2t +0.200"]
    assert claim_checks({"sam": {}}) == ["no vsepp run: claims not checked"]
