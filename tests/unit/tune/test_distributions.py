"""Distribution leaves: parsing, range checks, Tune domains and corners."""

from __future__ import annotations

import numpy as np
import pytest

from vse_ray.tune.distributions import Distribution, is_distribution, parse_distribution


@pytest.mark.parametrize(
    ("spec", "corners"),
    [
        ({"uniform": [0.1, 0.3]}, [0.1, 0.3]),
        ({"loguniform": [1e-4, 1e-3]}, [1e-4, 1e-3]),
        ({"quniform": [0.0, 1.0, 0.25]}, [0.0, 1.0]),
        ({"randint": [2, 5]}, [2, 4]),
        ({"choice": ["rs", "hn", "sn"]}, ["rs", "hn", "sn"]),
        ({"grid": [[2, 2], [2, 4]]}, [[2, 2], [2, 4]]),
    ],
)
def test_parse_and_corners(spec, corners):
    dist = parse_distribution(spec, "params.x")
    assert dist == Distribution(next(iter(spec)), tuple(spec[next(iter(spec))]))
    assert dist.corners() == corners


@pytest.mark.parametrize(
    "spec",
    [
        {"uniform": [0.1, 0.3]},
        {"loguniform": [1e-4, 1e-3]},
        {"quniform": [0.0, 1.0, 0.25]},
        {"randint": [2, 5]},
    ],
)
def test_tune_domain_samples_inside_corners(spec):
    dist = parse_distribution(spec, "x")
    low, high = dist.corners()
    draws = np.array(dist.to_tune().sample(size=200, random_state=0))
    assert draws.min() >= low and draws.max() <= high
    assert len(np.unique(draws)) > 1


def test_choice_and_grid_domains():
    assert parse_distribution({"choice": [3, 5, 10]}, "x").to_tune().categories == [3, 5, 10]
    assert parse_distribution({"grid": [1, 2]}, "x").to_tune() == {"grid_search": [1, 2]}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"uniform": [0.3, 0.1]}, "range is empty"),
        ({"uniform": [0.2, 0.2]}, "range is empty"),
        ({"uniform": [0.1]}, "needs 2 numbers"),
        ({"uniform": ["a", 1]}, "needs 2 numbers"),
        ({"uniform": [0.0, float("inf")]}, "needs 2 numbers"),
        ({"loguniform": [0.0, 1.0]}, "low > 0"),
        ({"randint": [1.5, 3]}, "integers"),
        ({"quniform": [0.0, 1.0, 0.0]}, "q must be > 0"),
        ({"quniform": [0.0, 1.0]}, "needs 3 numbers"),
        ({"choice": []}, "non-empty list"),
        ({"grid": 3}, "non-empty list"),
    ],
)
def test_impossible_ranges_name_the_leaf(spec, message):
    with pytest.raises(ValueError, match=message) as err:
        parse_distribution(spec, "params.loss_params.margin")
    assert "params.loss_params.margin" in str(err.value)


def test_is_distribution():
    assert is_distribution({"choice": [1]})
    assert not is_distribution({"choice": [1], "grid": [2]})
    assert not is_distribution({"margin": 0.2})
    assert not is_distribution([0.2])
