"""The image stage on files (Karpathy JSON, with bad files becoming reject rows) and on precomp features."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

from tests.unit.data.conftest import write_karpathy, write_precomp
from vse_ray.data.precompute.config import ExecutionOptions, PrecomputeConfig
from vse_ray.data.precompute.image_stage import run_image_stage
from vse_ray.data.precompute.manifest import table_counts
from vse_ray.data.precompute.run import check_rejects
from vse_ray.data.sources.image_io import FileImages
from vse_ray.data.sources.karpathy import read_karpathy
from vse_ray.data.sources.precomp import read_precomp
from vse_ray.data.sources.source import Source
from vse_ray.features import CNNFeatureExtractor

pytestmark = pytest.mark.ray


def test_karpathy_images_with_corrupt_missing_and_non_image_files(ray_session, tmp_path):
    path = write_karpathy(tmp_path, {"train": 6, "val": 2})
    folder = tmp_path / "images" / "val2014"
    (folder / "img1.png").write_bytes((folder / "img1.png").read_bytes()[:60])  # truncated
    (folder / "img3.png").write_text("just some text")  # not an image
    (folder / "img4.png").unlink()  # missing
    config = PrecomputeConfig(
        dataset="karpathy",
        karpathy_json=str(path),
        image_root=str(tmp_path / "images"),
        splits=("train", "val"),
        cnn="small",
        weights=None,
        resize=20,
        crop=16,
        shard_size=4,
    ).resolved()
    source = Source(splits=read_karpathy(str(path), config.splits), images=FileImages(config.image_root))
    assert run_image_stage(source, config, ExecutionOptions(cnn_actors=1), tmp_path / "out") == 8

    counts, _, rejects = table_counts(tmp_path / "out", "features", config.splits)
    assert counts == {"train": 3, "val": 2}
    reasons = {r["image_id"]: (r["path"], r["reason"]) for r in rejects}
    assert sorted(reasons) == [101, 103, 104]
    assert reasons[101][0] == "val2014/img1.png" and reasons[101][1].startswith("corrupt image")
    assert reasons[103][1].startswith("not an image") and reasons[104][1].startswith("missing file")

    table = pq.read_table(tmp_path / "out" / "features" / "split=train").sort_by("image_id")
    assert table["image_id"].to_pylist() == [100, 102, 105]
    pixels = np.stack(
        [
            np.asarray(Image.open(folder / f"img{k}.png").convert("RGB").resize((20, 20), Image.BICUBIC))
            for k in (0, 2, 5)
        ]
    )
    expected = CNNFeatureExtractor("small", None, crop=16).features(pixels)
    np.testing.assert_allclose(
        np.stack(table["feature"].to_numpy(zero_copy_only=False)), expected, rtol=1e-4, atol=1e-5
    )
    assert "image" not in table.column_names  # karpathy keeps no images by default

    with pytest.raises(
        ValueError, match=r"3 of 6 train images were rejected, more than max_reject_fraction=0.4"
    ):
        check_rejects(rejects, source, 0.4)
    check_rejects(rejects, source, 0.5)


def test_precomp_features_are_copied_row_for_row(ray_session, tmp_path):
    folder = write_precomp(tmp_path / "pc", {"train": 5, "test": 3}, per_caption=True)
    config = PrecomputeConfig(
        dataset="precomp", precomp_dir=str(folder), splits=("train", "test"), shard_size=2
    )
    splits, features = read_precomp(str(folder), config.splits)
    out = tmp_path / "out"
    assert (
        run_image_stage(Source(splits=splits, features=features), config.resolved(), ExecutionOptions(), out)
        == 8
    )
    table = pq.read_table(out / "features" / "split=test").sort_by("image_id")
    assert table["image_id"].to_pylist() == [5, 6, 7]
    np.testing.assert_allclose(
        np.stack(table["feature"].to_numpy(zero_copy_only=False))[:, 0], [0.0, 1.0, 2.0]
    )
