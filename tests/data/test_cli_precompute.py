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
