"""`vse-ray precompute` parses its options and fails early, before Ray starts, on bad ones."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from vse_ray.cli.main import app


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--dataset", "karpathy"], "needs karpathy_json and image_root"),
        (["--crop", "big"], "--crop 'big'"),
        (["--keep-images", "maybe"], "--keep-images 'maybe'"),
        (["--relevance", "sbert,bleu"], "unknown source 'bleu'"),
    ],
)
def test_bad_options_fail_before_ray(tmp_path, args, message):
    result = CliRunner().invoke(app, ["precompute", "--out", str(tmp_path / "o"), *args])
    assert result.exit_code != 0
    assert message in str(result.exception) + result.output
    assert not (tmp_path / "o").exists()


def test_overwrite_refuses_a_folder_named_like_vse_ray_and_keeps_it(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.js").write_text("console.log(1)")
    (tmp_path / "manifest.json").write_text('{"name": "my web app"}')
    args = ["precompute", "--out", str(tmp_path), "--overwrite", "--n-train", "8", "--n-val", "4"]
    result = CliRunner().invoke(app, [*args, "--n-test", "4", "--cnn", "small", "--weights", "none"])
    assert result.exit_code == 2
    assert "holds no vse_ray precompute" in result.output
    assert (tmp_path / "src" / "app.js").is_file() and (tmp_path / "manifest.json").is_file()
