"""Region features in precompute: 3-D precomp arrays and CNN grids written as Arrow IPC region tables."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pytest

from tests.unit.data.conftest import write_karpathy, write_precomp
from vse_ray.data.precompute.config import ExecutionOptions, PrecomputeConfig
from vse_ray.data.precompute.image_stage import run_image_stage
from vse_ray.data.precompute.run import feature_dims
from vse_ray.data.sources.image_io import FileImages, load_images
from vse_ray.data.sources.karpathy import read_karpathy
from vse_ray.data.sources.precomp import read_precomp
from vse_ray.data.sources.source import Source
from vse_ray.data.store.readers import load_features
from vse_ray.data.store.schema import features_table
from vse_ray.features import CNNFeatureExtractor


def test_region_count_or_width_differing_between_splits(tmp_path):
    folder = write_precomp(tmp_path / "pc", {"train": 3, "dev": 2}, regions=4)
    np.save(folder / "dev_ims.npy", np.zeros((2, 5, 6), np.float32))
    with pytest.raises(
        ValueError, match=r"dev_ims.npy: rows of shape \(5, 6\) .* differ from .*train_ims.npy: \(4, 6\)"
    ):
        read_precomp(str(folder), ("train", "val"))
    np.save(folder / "dev_ims.npy", np.zeros((2, 4, 7), np.float32))
    with pytest.raises(ValueError, match=r"dev_ims.npy: rows of shape \(4, 7\)"):
        read_precomp(str(folder), ("train", "val"))


def test_float16_overflow_names_file_and_row(tmp_path):
    folder = write_precomp(tmp_path / "pc", {"train": 3}, regions=2)
    feats = np.load(folder / "train_ims.npy")
    feats[2, 1, 3] = 7.0e4
    np.save(folder / "train_ims.npy", feats)
    read_precomp(str(folder), ("train",))  # float32 storage holds it
    with pytest.raises(ValueError, match=r"train_ims.npy \(feature_dtype float16\): row 2 .* 70000 > 65504"):
        read_precomp(str(folder), ("train",), feature_dtype="float16")
    batch = {"image_id": np.arange(3), "split": np.array(["train"] * 3), "feature": feats}
    with pytest.raises(ValueError, match=r"region features: row 2 \(shape \(2, 6\)\)"):
        features_table(batch, False, "float16")


@pytest.mark.ray
def test_precomp_regions_stream_into_arrow_tables(ray_session, tmp_path):
    folder = write_precomp(tmp_path / "pc", {"train": 5, "test": 3}, per_caption=True, regions=4)
    config = PrecomputeConfig(
        dataset="precomp",
        precomp_dir=str(folder),
        splits=("train", "test"),
        shard_size=2,
        feature_dtype="float16",
    ).resolved()
    splits, features = read_precomp(str(folder), config.splits, feature_dtype="float16")
    out = tmp_path / "out"
    assert run_image_stage(Source(splits=splits, features=features), config, ExecutionOptions(), out) == 8
    assert sorted(p.name for p in (out / "features" / "split=test").iterdir()) == [
        "part-00000000.arrow",
        "part-00000002.arrow",
    ]
    table = pads.dataset(out / "features" / "split=test", format="arrow").to_table().sort_by("image_id")
    assert table.schema.field("feature").type == pa.list_(pa.list_(pa.float16(), 6), 4)
    ids, feats = load_features(str(out), "test")
    assert ids.tolist() == [5, 6, 7] == table["image_id"].to_pylist()
    expected = np.load(folder / "test_ims.npy")[::5]  # one caption row per image
    np.testing.assert_array_equal(feats, expected.astype(np.float16))
    assert feature_dims(out) == {
        "feature": 6,
        "regions": 4,
        "feature_dtype": "float16",
        "feature_shape": [4, 6],
    }


@pytest.mark.ray
def test_grid_features_are_the_last_conv_map(ray_session, tmp_path):
    path = write_karpathy(tmp_path, {"train": 3})
    config = PrecomputeConfig(
        dataset="karpathy",
        karpathy_json=str(path),
        image_root=str(tmp_path / "images"),
        splits=("train",),
        cnn="small",
        weights=None,
        resize=20,
        crop=16,
        shard_size=2,
        grid=True,
    ).resolved()
    source = Source(splits=read_karpathy(str(path), ("train",)), images=FileImages(str(tmp_path / "images")))
    out = tmp_path / "out"
    assert run_image_stage(source, config, ExecutionOptions(cnn_actors=1), out) == 3
    _, feats = load_features(str(out), "train")
    assert feats.shape == (3, 4, 256)  # 16 px through three 2x poolings: 2 x 2 regions of 256
    refs = np.array([f"val2014/img{k}.png" for k in range(3)])
    pixels = load_images({"ref": refs}, source=FileImages(str(tmp_path / "images")), size=20, keep_png=False)[
        "pixels"
    ]
    grid = CNNFeatureExtractor("small", None, crop=16, grid=True).features(pixels)
    np.testing.assert_allclose(feats, grid, rtol=1e-5, atol=1e-6)
    pooled = CNNFeatureExtractor("small", None, crop=16).features(pixels)
    np.testing.assert_allclose(
        grid.mean(axis=1), pooled, rtol=1e-4, atol=1e-6
    )  # average of the grid = pooled
