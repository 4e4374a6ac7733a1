"""`vse-ray gsmn-data`: GSMN's released folder as region features with box columns and one graph file."""

from __future__ import annotations

import json

import numpy as np
from typer.testing import CliRunner

from vse_ray.cli.main import app

CAPTIONS = ["a dog runs", "a dog is running", "two cats", "a cat sits", "a dog runs"]


def _released(folder, prefix: str, n: int, edges_of_dup: list) -> None:
    """A released split: n images of 3 regions x 5 features, boxes in pixels, sizes, 5 captions each."""
    rng = np.random.default_rng(len(prefix))
    np.save(folder / f"{prefix}_ims.npy", rng.normal(size=(n, 3, 5)).astype(np.float32))
    np.save(folder / f"{prefix}_ims_bbx.npy", rng.uniform(0, 400, size=(n, 3, 4)).astype(np.float32))
    sizes = np.array([{"image_w": 500 + k, "image_h": 400 - k} for k in range(n)], dtype=object)
    np.save(folder / f"{prefix}_ims_size.npy", sizes, allow_pickle=True)
    lines = CAPTIONS * n
    (folder / f"{prefix}_caps.txt").write_text("\n".join(lines) + "\n")
    edges = [[[0, 2], [2, 1]] if c != "a dog runs" or k < 5 else edges_of_dup for k, c in enumerate(lines)]
    (folder / f"{prefix}_caps.json").write_text(json.dumps(edges))


def test_writes_boxed_features_captions_and_graphs(tmp_path):
    released, out = tmp_path / "released", tmp_path / "out"
    released.mkdir()
    for prefix, n in (("train", 2), ("dev", 1), ("test", 1), ("testall", 1)):
        _released(released, prefix, n, [[0, 3], [3, 1]])
    result = CliRunner().invoke(app, ["gsmn-data", "--precomp-dir", str(released), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "graphs.json: 4 captions (1 with other edges elsewhere: the first kept)" in result.output
    features = np.load(out / "train_ims.npy")
    boxes = np.load(released / "train_ims_bbx.npy")
    assert features.shape == (2, 3, 9)
    np.testing.assert_array_equal(features[..., :5], np.load(released / "train_ims.npy"))
    np.testing.assert_array_equal(features[1, :, 5:], boxes[1] / np.float32([501, 399, 501, 399]))
    assert (out / "dev_caps.txt").read_text() == (released / "dev_caps.txt").read_text()
    assert np.load(out / "testall_ims.npy").shape == (1, 3, 9)  # COCO's 5,000 test images
    assert json.loads((out / "graphs.json").read_text())["a dog runs"] == [[0, 2], [2, 1]]


def test_a_missing_released_file_is_named(tmp_path):
    released = tmp_path / "released"
    released.mkdir()
    _released(released, "train", 1, [])
    (released / "train_caps.json").unlink()
    result = CliRunner().invoke(
        app, ["gsmn-data", "--precomp-dir", str(released), "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2
    assert "no train_caps.json (GSMN's released data has it per split)" in result.output
