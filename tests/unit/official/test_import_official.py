"""`vse-ray import`: a VSE∞ checkpoint written by the released code's own save routine gives the released
forward's similarities; foreign, truncated and mismatched files are refused in one line."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from tests.support import tiny_store
from vse_ray.cli.main import app
from vse_ray.models import rebuild_model
from vse_ray.official.torch_file import load_torch_file
from vse_ray.tracking.checkpoint import load_checkpoint

FIXTURES = Path(__file__).parents[2] / "fixtures" / "official"
RELEASED = FIXTURES / "vse_inf_bigru_checkpoint.pth"


def _import(checkpoint: Path, output: Path):
    return CliRunner().invoke(app, ["import", "--checkpoint", str(checkpoint), "--output", str(output)])


def _one_error_line(result, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 2 and lines[0].startswith("error: ") and "--debug" in lines[1], result.output
    assert all(f in lines[0] for f in fragments), lines[0]


def test_imported_model_gives_the_released_similarities(tmp_path):
    result = _import(RELEASED, tmp_path / "imported")
    assert result.exit_code == 0, result.output
    state = load_checkpoint(tmp_path / "imported")
    assert state["imported_from"]["format"] == "vse_infty_bigru"
    model = rebuild_model(state).eval()
    expected = np.load(FIXTURES / "vse_inf_bigru_official.npz")
    with torch.no_grad():
        images = model.encode_images(torch.from_numpy(expected["images"]))
        captions = model.encode_captions(
            torch.from_numpy(expected["captions"]), torch.from_numpy(expected["lengths"])
        )
    sims = (images @ captions.T).numpy()
    assert sims.dtype == np.float32 and sims.shape == expected["sims"].shape == (4, 6)
    np.testing.assert_allclose(sims, expected["sims"], rtol=0, atol=1e-5)


def test_imported_checkpoint_evaluates_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setattr(tiny_store, "FEATURE_DIM", 12)  # the fixture's img_dim; 19 words fit its 21 rows
    data = tiny_store.write_tiny_store(tmp_path / "regions", regions=5)
    assert _import(RELEASED, tmp_path / "imported").exit_code == 0
    args = ["evaluate", "--run", str(tmp_path / "imported"), "--data", str(data), "--split", "test"]
    result = CliRunner().invoke(app, [*args, "--output-dir", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "reports" / "imported_test_full.json").is_file()


def test_existing_output_is_not_overwritten(tmp_path):
    assert _import(RELEASED, tmp_path / "out").exit_code == 0
    _one_error_line(_import(RELEASED, tmp_path / "out"), "model.pt exists")


class Payload:
    """A type outside the allow-list (a pickle may name any importable callable)."""


def _resaved(tmp_path: Path, change) -> Path:
    raw = load_torch_file(RELEASED)
    change(raw)
    path = tmp_path / "changed.pth"
    torch.save(raw, path)
    return path


def _set_opt(**values):
    def change(raw):
        raw["opt"] = argparse.Namespace(**{**vars(raw["opt"]), **values})

    return change


@pytest.mark.parametrize(
    ("change", "fragments"),
    [
        (_set_opt(embed_size=32), ["img_enc 'fc.weight': expected shape (32, 12)", "found (16, 12)"]),
        (_set_opt(vocab_size=30), ["expected txt_enc 'embed.weight' of 30 rows", "found 21"]),
        (_set_opt(precomp_enc_type="backbone"), ["expected opt.precomp_enc_type 'basic'", "'backbone'"]),
        (lambda raw: raw["model"][1].pop("rnn.bias_hh_l0"), ["expected txt_enc 'rnn.bias_hh_l0'", "none"]),
        (
            lambda raw: raw["model"][1].update({"bert.embeddings.word_embeddings.weight": torch.zeros(2, 2)}),
            ["expected a BiGRU text encoder", "found a BERT one"],
        ),
        (lambda raw: raw["model"].append({}), ["expected a VSE∞ checkpoint", "SGRAF/SCAN"]),
        (lambda raw: raw.pop("opt"), ["expected a VSE∞ checkpoint", "found keys"]),
        (lambda raw: raw.update(extra=Payload()), ["holds the type", "Payload", "not loaded"]),
    ],
)
def test_mismatched_files_are_one_line(tmp_path, change, fragments):
    path = _resaved(tmp_path, change)
    _one_error_line(_import(path, tmp_path / "out"), f"checkpoint {path}", *fragments)
    assert not (tmp_path / "out").exists()


def test_truncated_file_is_one_line(tmp_path):
    path = tmp_path / "truncated.pth"
    path.write_bytes(RELEASED.read_bytes()[:50_000])
    _one_error_line(
        _import(path, tmp_path / "out"),
        f"checkpoint {path}",
        "expected a torch.save file, found a truncated zip archive",
    )


def test_foreign_file_is_one_line(tmp_path):
    path = tmp_path / "vocab.json"
    path.write_text('{"<pad>": 0}')
    _one_error_line(
        _import(path, tmp_path / "out"), "expected a torch.save file, found a file that starts with"
    )


def test_vse_ray_checkpoint_is_named_as_such(tmp_path):
    assert _import(RELEASED, tmp_path / "first").exit_code == 0
    shutil.copy(tmp_path / "first" / "model.pt", tmp_path / "native.pt")
    _one_error_line(_import(tmp_path / "native.pt", tmp_path / "out"), "found a vse_ray checkpoint")
