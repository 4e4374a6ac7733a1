"""The frozen image tower's embeddings cached once by a Ray Data actor pool: the rows `encode_images` gives,
in the split's stored order, and a zero-shot report from the cache equal to one that runs the tower."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from tests.support.cli import run_cli, zero_shot_args
from vse_ray.data.store.split_data import load_split
from vse_ray.evaluation.image_cache import read_image_cache
from vse_ray.evaluation.zero_shot import model_label
from vse_ray.models import build_model

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
