"""Search-space YAML: structure checks, flat Tune param space, overrides, corners."""

from __future__ import annotations

import pytest
from ray.tune.search.variant_generator import generate_variants

from vse_ray.tune.distributions import Distribution
from vse_ray.tune.search_space import load_search_space, parse_search_space, unflatten

SPACE_TEXT = """
loss: ladder
metric: CS_at_100_i2t
params:
  lr: {loguniform: [1e-4, 1.0e-3]}
  batch_size: 64
  loss_params:
    margins: [0.2, {uniform: [0.005, 0.05]}]
one_of:
  levels:
    - {loss_params: {thresholds: [0.4], betas: [1.0, {choice: [0.0, 0.25, 0.5]}]}}
    - {loss_params: {thresholds: [0.45, 0.35], betas: [1.0, 0.25, 0.125]}}
"""


@pytest.fixture()
def space(tmp_path):
    path = tmp_path / "space.yaml"
    path.write_text(SPACE_TEXT)
    return load_search_space(path)


def test_parse_flattens_leaves(space):
    assert space.loss == "ladder" and space.metric == "CS_at_100_i2t" and space.mode == "max"
    assert space.leaves["lr"] == Distribution("loguniform", (1e-4, 1e-3))  # YAML 1.2 float, not the string
    assert space.leaves["batch_size"] == 64
    assert space.leaves["loss_params.margins.0"] == 0.2
    assert space.leaves["loss_params.margins.1"] == Distribution("uniform", (0.005, 0.05))
    assert space.one_of["levels"][1] == {
        "loss_params.thresholds": [0.45, 0.35],
        "loss_params.betas": [1.0, 0.25, 0.125],
    }


def test_param_space_holds_only_sampled_leaves(space):
    assert sorted(space.param_space()) == [
        "loss_params.margins.1",
        "lr",
        "one_of.levels",
        "one_of.levels.0.loss_params.betas.1",
    ]


def test_overrides_rebuild_nested_values(space):
    sample = {
        "lr": 3e-4,
        "loss_params.margins.1": 0.02,
        "one_of.levels": 0,
        "one_of.levels.0.loss_params.betas.1": 0.5,
    }
    assert space.overrides(sample) == {
        "lr": 3e-4,
        "batch_size": 64,
        "loss_params": {"margins": [0.2, 0.02], "thresholds": [0.4], "betas": [1.0, 0.5]},
    }
    sample["one_of.levels"] = 1
    assert space.overrides(sample)["loss_params"]["betas"] == [1.0, 0.25, 0.125]


def test_tune_variants_resolve_to_overrides_inside_the_space(space):
    for _, config in generate_variants({"config": space.param_space()}):
        overrides = space.overrides(config["config"])
        assert 1e-4 <= overrides["lr"] <= 1e-3
        assert 0.005 <= overrides["loss_params"]["margins"][1] <= 0.05
        assert len(overrides["loss_params"]["betas"]) == len(overrides["loss_params"]["thresholds"]) + 1


def test_corner_overrides_visit_every_bound_and_option(space):
    corners = space.corner_overrides()
    assert {c["lr"] for c in corners} == {1e-4, 1e-3}
    assert {c["loss_params"]["margins"][1] for c in corners} == {0.005, 0.05}
    assert {c["loss_params"]["betas"][1] for c in corners if len(c["loss_params"]["betas"]) == 2} == {
        0.0,
        0.25,
        0.5,
    }
    assert any(c["loss_params"]["thresholds"] == [0.45, 0.35] for c in corners)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("loss: vsepp\nparms: {}", r"unknown top-level key\(s\) \['parms'\]"),
        ("params: {lr: 0.1}", "'loss' .* is required"),
        ("loss: vsepp\nmode: maximise", "'mode' must be 'max' or 'min'"),
        ("loss: vsepp\nparams: {lr: {uniform: [0.1, 0.01]}}", r"params\.lr: 'uniform' range is empty"),
        ("loss: vsepp\nparams: {lr: {loguniform: [0, 0.01]}}", "low > 0"),
        (
            "loss: vsepp\nparams: {loss_params: {margins: [0.2, {uniform: [1, 1]}]}}",
            r"margins\[1\]: 'uniform'",
        ),
        ("loss: vsepp\nparams: {a.b: 1}", "without dots"),
        ("loss: vsepp\nparams: [1, 2]", "expected a mapping"),
        ("loss: vsepp\none_of: {g: []}", "one_of.g must be a non-empty list"),
        (
            "loss: vsepp\nparams: {lr: 0.1}\none_of: {g: [{lr: 0.2}]}",
            "one_of.g sets 'lr', already set by params",
        ),
        ("- 1\n- 2", "a space is a mapping"),
    ],
)
def test_schema_errors_name_the_file_and_key(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=message) as err:
        load_search_space(path)
    assert str(path) in str(err.value)


def test_missing_file(tmp_path):
    with pytest.raises(ValueError, match="no such file or shipped space"):
        load_search_space(tmp_path / "nope.yaml")


def test_unflatten_lists_and_gaps():
    assert unflatten({"a.0": 1, "a.1": {"x": 2}, "b": 3}) == {"a": [1, {"x": 2}], "b": 3}
    with pytest.raises(ValueError, match="list positions"):
        unflatten({"a.0": 1, "a.2": 2})


@pytest.mark.parametrize("name", ["vsepp", "ladder", "ladder_auto", "sam", "bcls", "lseh"])
def test_shipped_spaces_parse(name):
    space = load_search_space(name)
    assert space.loss == name
    assert isinstance(space.leaves["lr"], Distribution)
    assert parse_search_space({"loss": name}).leaves == {}
