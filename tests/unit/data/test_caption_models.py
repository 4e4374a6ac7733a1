"""Train-caption models of the precompute: the TF-IDF + SVD file holds arrays; a reduced k is said."""

from __future__ import annotations

import numpy as np

from vse_ray.data.precompute.caption_stage import fit_train_models
from vse_ray.data.precompute.config import PrecomputeConfig
from vse_ray.relevance import SOURCES, TfidfSvd

SVD_FILE = str(SOURCES["svd"].model_file)

TEXTS = ["red bike", "blue horse", "green fence", "red horse", "blue bike", "green bike"]  # 6 terms


def test_small_data_reduces_svd_dim_and_says_so(tmp_path, caplog):
    train = {"image_id": np.repeat([0, 1], 3), "text": np.array(TEXTS, dtype=object)}
    _, fitted = fit_train_models(train, PrecomputeConfig(svd_dim=400, vocab_min_count=1), tmp_path)
    arrays = fitted["svd"]
    assert arrays["components"].shape == (5, 6)
    assert "svd_dim: reduced from 400 to 5" in caplog.text  # a warning: on the console, or in the log file
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
