"""The frozen image tower's embeddings cached once by a Ray Data actor pool: the rows `encode_images` gives,
in the split's stored order, a zero-shot report from the cache equal to one that runs the tower, and a
locked-image training that computes the caches it reads."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from tests.support.cli import run_cli, zero_shot_args
from tests.support.tiny_store import tiny_config
from vse_ray.data.store.split_data import load_split
from vse_ray.evaluation.image_cache import model_label, read_image_cache
from vse_ray.models import build_model
from vse_ray.train.preflight import check_training
from vse_ray.train.trainer import fit

pytestmark = pytest.mark.ray


def test_cache_holds_the_towers_embeddings_and_scores_alike(ray_session, tiny_pixel_dir, tiny_clip, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(tiny_pixel_dir, data)
    params = tiny_clip["hf"]
    reports = []
    for flags in ([], ["--image-cache"], ["--image-cache"]):  # the tower; the cache computed; the cache read
        out = tmp_path / f"out{len(reports)}"
        result = run_cli([*zero_shot_args(params, data, out), *flags])
        assert result.exit_code == 0, result.output
        (path,) = (out / "reports").glob("clip-*.json")
        reports.append(json.loads(path.read_text())["metrics"])
    assert reports[0] == reports[1] == reports[2]

    cached = read_image_cache(str(data), model_label("clip", params), "test")
    assert cached is not None
    split = load_split(str(data), "test", raw=True)
    np.testing.assert_array_equal(cached[0], split.images.image_ids)
    with torch.no_grad():
        pixels = torch.from_numpy(np.array(split.images.pixels))
        expected = build_model("clip", **params).eval().encode_images(pixels)
    np.testing.assert_allclose(cached[1], expected.numpy(), rtol=0, atol=1e-6)


def test_locked_image_training_computes_the_caches_it_reads(
    ray_session, tiny_pixel_dir, tiny_clip, tmp_path, mlflow_uri
):
    """`fit` computes the train and val caches with the Ray Data stage before the training starts, under the
    label zero-shot scoring reads (tests/unit/train/test_locked_image.py: a run from them equals one from
    the pixels)."""
    data = tmp_path / "data"
    shutil.copytree(tiny_pixel_dir, data)
    params = tiny_clip["hf"]
    settings = {"num_workers": 0, "tracking_uri": mlflow_uri, "epochs": 1}  # in this process: no Ray Train
    cfg = tiny_config(
        data,
        tmp_path / "out",
        model="clip",
        loss="infonce",
        model_params=params,
        lock_image=True,
        image_cache=True,
        train_images=16,
        **settings,
    )
    assert not (data / "image_embeddings").exists()
    result = fit(check_training(cfg.checked()))
    assert [m["epoch"] for m in result.history] == [1]
    for split in ("train", "val"):
        cached = read_image_cache(str(data), model_label("clip", params), split)
        assert cached is not None
        np.testing.assert_array_equal(cached[0], load_split(str(data), split, raw=True).images.image_ids)
