"""`vse-ray evaluate --sims`: a matrix from elsewhere scored as evaluate_all does; bad files: one line."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from vse_ray.cli.main import app
from vse_ray.data.store.split_data import load_split
from vse_ray.metrics import evaluate_all


@pytest.fixture(scope="module")
def test_split(tiny_data_dir):
    return load_split(str(tiny_data_dir), "test", raw=False)


def _evaluate(sims_path, data_dir, out) -> object:
    args = ["evaluate", "--sims", str(sims_path), "--data", str(data_dir), "--split", "test"]
    return CliRunner().invoke(app, [*args, "--output-dir", str(out)])


def test_sims_file_scores_like_evaluate_all(tiny_data_dir, test_split, tmp_path):
    n_images, n_captions = len(test_split.images.image_ids), len(test_split.caption_ids)
    sims = np.random.default_rng(3).normal(size=(n_images, n_captions)).astype(np.float32)
    np.save(tmp_path / "random.npy", sims)
    result = _evaluate(tmp_path / "random.npy", tiny_data_dir, tmp_path / "out")
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "out" / "reports" / "random_test_full.json").read_text())
    expected = evaluate_all(sims, test_split.img_of_cap, test_split.relevance)
    assert report["metrics"].keys() == expected.keys() and "CS_at_5_i2t" in expected
    assert all(
        np.isclose(report["metrics"][k], v, rtol=0, atol=0, equal_nan=True) for k, v in expected.items()
    )


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda n, m: np.zeros((m, n)), "found shape (100, 20) (captions x images: transpose it)"),
        (lambda n, m: np.zeros((n, m - 1)), "found shape (20, 99)"),
        (lambda n, m: np.full((n, m), np.nan), "expected finite values, found nan at (0, 0)"),
    ],
)
def test_bad_matrix_is_one_line(tiny_data_dir, test_split, tmp_path, make, fragment):
    path = tmp_path / "bad.npy"
    np.save(path, make(len(test_split.images.image_ids), len(test_split.caption_ids)))
    result = _evaluate(path, tiny_data_dir, tmp_path / "out")
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 2 and str(path) in lines[0] and fragment in lines[0], result.output
    if "shape" in fragment:
        assert "expected (n_images, n_captions) = (20, 100)" in lines[0]


def test_foreign_file_is_one_line(tiny_data_dir, tmp_path):
    path = tmp_path / "sims.npy"
    path.write_bytes(b"not numpy")
    result = _evaluate(path, tiny_data_dir, tmp_path / "out")
    assert result.exit_code == 2 and f"sims {path}: not a .npy array" in result.output, result.output


def test_help_states_the_order():
    result = CliRunner().invoke(app, ["evaluate", "--help"], terminal_width=200)
    text = " ".join(result.output.split())
    assert "sorted by caption_id" in text and "stored order" in text


def test_eccv_on_1k_folds_is_refused_before_anything_is_read(tiny_data_dir, tmp_path):
    """ECCV Caption's positives span the 5K test images: on 1K folds they would be cut; one line says so."""
    path = tmp_path / "sims.npy"  # neither file exists: the check comes first
    args = ["evaluate", "--sims", str(path), "--data", str(tiny_data_dir), "--protocol", "coco1k"]
    args += ["--coco-ids", str(tmp_path / "ids.json"), "--output-dir", str(tmp_path / "out")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "--coco-ids: ECCV Caption's metrics are defined on COCO's 5K test images" in result.output


def test_ncs_against_spice_without_it_stored_is_one_line_before_scoring(tiny_data_dir, tmp_path):
    """SAM's N@K read the SPICE relevance: a split without it stops with one line saying how to add it, before
    the matrix is read (the file does not exist)."""
    args = ["evaluate", "--sims", str(tmp_path / "sims.npy"), "--data", str(tiny_data_dir)]
    result = CliRunner().invoke(app, [*args, "--ncs-reference", "spice", "--output-dir", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    assert (
        "no 'spice' relevance for NCS@K" in result.output and "precompute --relevance spice" in result.output
    )
    result = CliRunner().invoke(app, [*args, "--paper", "--output-dir", str(tmp_path / "o")])
    assert result.exit_code == 2 and "name the recipe with --recipe" in result.output, result.output
