"""Train-caption models of the precompute: the TF-IDF + SVD file holds arrays; a reduced k is said."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from vse_ray.data.precompute.caption_stage import fit_train_models
from vse_ray.data.precompute.config import PrecomputeConfig
from vse_ray.relevance import SOURCES, TfidfSvd

SVD_FILE = str(SOURCES["svd"].model_file)

TEXTS = ["red bike", "blue horse", "green fence", "red horse", "blue bike", "green bike"]  # 6 terms


@pytest.mark.parametrize(("svd_dim", "level"), [(400, logging.INFO), (300, logging.WARNING)])
def test_small_data_reduces_svd_dim_and_says_so(tmp_path, caplog, svd_dim, level):
    """A warning when the value was asked for; the default (400) reduced is an INFO record (the demo
    printed a warning about its own settings)."""
    caplog.set_level(logging.INFO)
    train = {"image_id": np.repeat([0, 1], 3), "text": np.array(TEXTS, dtype=object)}
    _, fitted = fit_train_models(train, PrecomputeConfig(svd_dim=svd_dim, vocab_min_count=1), tmp_path)
    arrays = fitted["svd"]
    assert arrays["components"].shape == (5, 6)
    (record,) = [r for r in caplog.records if "svd_dim: reduced from" in r.getMessage()]
    assert record.getMessage().startswith(f"svd_dim: reduced from {svd_dim} to 5") and record.levelno == level
    stored = TfidfSvd.load(tmp_path / SVD_FILE)
    np.testing.assert_array_equal(stored.transform(TEXTS), TfidfSvd.from_arrays(arrays).transform(TEXTS))


def test_svd_options_reach_the_stored_model_and_the_config_hash(tmp_path):
    train = {"image_id": np.repeat([0, 1], 3), "text": np.array(TEXTS, dtype=object)}
    config = PrecomputeConfig(svd_dim=3, vocab_min_count=1, svd_seed=122, svd_n_iter=100, svd_unit=False)
    fit_train_models(train, config, tmp_path)
    stored = TfidfSvd.load(tmp_path / SVD_FILE)
    assert (stored.seed, stored.n_iter, stored.stem, stored.unit) == (122, 100, False, False)
    assert PrecomputeConfig(seed=4).resolved().svd_seed == 4  # None: the dataset seed, as before
    assert PrecomputeConfig(svd_seed=0).hash() == PrecomputeConfig().hash()
    for option in ({"svd_seed": 122}, {"svd_n_iter": 100}, {"svd_stem": True}, {"svd_unit": False}):
        assert PrecomputeConfig(**option).hash() != PrecomputeConfig().hash()
        assert PrecomputeConfig(**option).resolved().to_dict().items() >= option.items()  # in the manifest
