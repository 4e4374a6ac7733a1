"""Spaces checked against the real TrainConfig and loss constructors before a sweep starts."""

from __future__ import annotations

import pytest
from ray.tune.search.variant_generator import generate_variants

from vse_ray.losses import LOSS_NAMES, loss_hparams, make_loss
from vse_ray.resources import resource_dir
from vse_ray.tune.search_space import load_search_space, parse_search_space
from vse_ray.tune.space_checks import check_search_space, trial_config, tunable_fields

SPACES = sorted(resource_dir("space").glob("*.yaml"))


@pytest.mark.parametrize("path", SPACES, ids=lambda p: p.stem)
def test_shipped_spaces_pass_and_their_samples_build(path):
    space = load_search_space(path)
    check_search_space(space)
    for _, config in generate_variants({"c": space.param_space()}):
        cfg = trial_config(space, space.overrides(config["c"]), {"data_dir": "/data", "epochs": 3}).config
        assert cfg.loss == space.loss and cfg.epochs == 3 and cfg.data_dir == "/data"
        make_loss(cfg.loss, **cfg.loss_params)


def test_one_space_per_loss_family():
    assert {p.stem for p in SPACES} == set(LOSS_NAMES) - {"vse0"}  # vse0: the warm-up loss


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"loss": "triplet"}, "loss 'triplet' is not one of"),
        (
            {"loss": "vsepp", "params": {"learning_rate": 0.1}},
            "'learning_rate' is not a tunable TrainConfig field",
        ),
        ({"loss": "vsepp", "params": {"data_dir": "/x"}}, "'data_dir' is not a tunable"),
        (
            {"loss": "vsepp", "params": {"loss_params": {"tau": 5}}},
            r"loss_params.tau is not a parameter of loss 'vsepp'",
        ),
        ({"loss": "sam", "params": {"loss_params": {"tau": {"uniform": [0, 5]}}}}, "tau must be > 0"),
        (
            {"loss": "sam", "params": {"loss_params": {"sampling": {"choice": ["sn", "xx"]}}}},
            "sampling must be one of",
        ),
        ({"loss": "vsepp", "params": {"batch_size": {"choice": [1, 128]}}}, "batch_size"),
        ({"loss": "vsepp", "params": {"model": {"choice": ["vsepp", "blip"]}}}, r"model: must be one of"),
        ({"loss": "vsepp", "params": {"lr": {"uniform": [-1.0, 1.0]}}}, "lr: must be a positive"),
        (
            {"loss": "ladder_auto", "one_of": {"g": [{"loss_params": {"l_min": 3, "l_max": 2}}]}},
            "l_max must be >= l_min",
        ),
        (
            {"loss": "ladder", "params": {"loss_params": {"thresholds": [0.3, {"uniform": [0.2, 0.4]}]}}},
            "thresholds must be strictly decreasing|margins",
        ),
    ],
)
def test_bad_spaces_name_the_problem(raw, message):
    with pytest.raises(ValueError, match=message) as err:
        check_search_space(parse_search_space(raw, source="my_space.yaml"))
    assert "my_space.yaml" in str(err.value)


def test_a_space_searches_the_model():
    space = parse_search_space({"loss": "lseh", "params": {"model": {"choice": ["vsepp", "vse_inf"]}}})
    check_search_space(space)
    models = {
        trial_config(space, space.overrides(c["c"])).config.model
        for _, c in generate_variants({"c": space.param_space()})
    }
    assert models <= {"vsepp", "vse_inf"}


def test_unknown_loss_param_error_lists_the_constructor_arguments():
    with pytest.raises(ValueError) as err:
        check_search_space(parse_search_space({"loss": "lseh", "params": {"loss_params": {"lambda": 0.1}}}))
    assert all(name in str(err.value) for name in loss_hparams("lseh"))


def test_tunable_fields_exclude_run_plumbing():
    fields = tunable_fields()
    assert {"lr", "batch_size", "loss_params", "epochs", "grad_clip"} <= set(fields)
    assert not {"data_dir", "storage_path", "tracking_uri", "experiment", "loss"} & set(fields)


def test_trial_config_merges_base_then_overrides():
    space = parse_search_space({"loss": "lseh"})
    base = {"data_dir": "/d", "lr": 1e-3, "loss_params": {"margin": 0.2, "lam": 0.01}}
    cfg = trial_config(space, {"lr": 5e-4, "loss_params": {"lam": 0.03}}, base).config
    assert (cfg.lr, cfg.loss, cfg.loss_params) == (5e-4, "lseh", {"margin": 0.2, "lam": 0.03})


def test_spaces_accept_a_quantile_threshold_and_a_relevance_source():
    raw = {
        "loss": "ladder",
        "params": {"loss_params": {"theta_quantile": {"uniform": [0.8, 0.95]}, "relevance_source": "scene"}},
    }
    space = parse_search_space(raw, source="quantile.yaml")
    check_search_space(space)
    for _, config in generate_variants({"c": space.param_space()}):
        cfg = trial_config(space, space.overrides(config["c"]), {"data_dir": "/data"}).config
        loss = make_loss(cfg.loss, **cfg.loss_params)
        assert loss.relevance_source == "scene" and 0.8 <= loss.theta_quantile[0] <= 0.95
    both = {"loss": "ladder", "params": {"loss_params": {"theta_quantile": 0.9, "thresholds": [0.4]}}}
    with pytest.raises(ValueError, match="not both"):
        check_search_space(parse_search_space(both, source="both.yaml"))
