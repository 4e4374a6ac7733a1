"""`vse-ray import --format ladder`: a snapshot written by the ladder loss code's own `evaluation()`
(cdluminate/ladderloss `thCapRank.py`: a list of one state dict, the validation score as a NumPy float and two
recall strings) gives the embeddings that code dumped; other files are refused in one line. How the fixtures
were made: tests/fixtures/official/README.md."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import torch

from tests.unit.official.test_import_official import _import, _one_error_line
from vse_ray.checkpoint_files import load_checkpoint
from vse_ray.models import rebuild_model
from vse_ray.official import FORMATS
from vse_ray.official.torch_file import load_torch_file

FIXTURES = Path(__file__).parents[2] / "fixtures" / "official"
SNAPSHOT = FIXTURES / "ladder_checkpoint.pth"


def _similarities(output: Path) -> np.ndarray:
    model = rebuild_model(load_checkpoint(output)).eval()
    expected = np.load(FIXTURES / "ladder_official.npz")
    lengths = torch.from_numpy(expected["lengths"])
    with torch.no_grad():
        images = model.encode_images(torch.from_numpy(expected["images"]))
        captions = model.encode_captions(torch.from_numpy(expected["captions"]), lengths)
        return model.score(images, captions, lengths).numpy()


def test_imported_snapshot_gives_the_released_embeddings(tmp_path):
    result = _import(SNAPSHOT, tmp_path / "imported", "--format", "ladder")
    assert result.exit_code == 0, result.output
    state = load_checkpoint(tmp_path / "imported")
    assert state["imported_from"]["format"] == "ladder" and state["model_name"] == "vsepp"
    assert state["model_args"] == {
        "vocab_size": 24,
        "feature_dim": 12,
        "word_dim": 300,
        "embed_dim": 16,
        "normalize_image": True,
    }
    sims = _similarities(tmp_path / "imported")
    expected = np.load(FIXTURES / "ladder_official.npz")["sims"]
    print(f"\nladder: max |diff| {np.abs(sims - expected).max():.1e}")
    assert sims.shape == expected.shape == (4, 20)
    np.testing.assert_allclose(sims, expected, rtol=0, atol=1e-5)


def test_official_names_round_trip():
    names = FORMATS["ladder"].names
    for name in load_torch_file(SNAPSHOT)[0]:
        assert names.official(names.ours(f"model.{name}") or "") == f"model.{name}", name


def test_a_snapshot_pickled_by_numpy_1_loads(tmp_path):
    """Files of 2020 name the score's NumPy scalar type by NumPy 1's module, numpy.core."""
    old = tmp_path / "numpy1.pth"
    with zipfile.ZipFile(SNAPSHOT) as source, zipfile.ZipFile(old, "w") as target:
        for item in source.infolist():
            data = source.read(item)
            if item.filename.endswith("data.pkl"):
                assert b"numpy._core.multiarray\nscalar" in data
                data = data.replace(b"numpy._core.multiarray\nscalar", b"numpy.core.multiarray\nscalar")
            target.writestr(item, data)
    assert float(load_torch_file(old)[1]) == float(load_torch_file(SNAPSHOT)[1])
    assert _import(old, tmp_path / "imported", "--format", "ladder").exit_code == 0


def test_the_data_vocabulary_must_have_the_embedding_rows(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    vocab = np.load(FIXTURES / "ladder_official.npz")["vocab"].tolist()
    (data / "vocab.json").write_text(json.dumps({w: i for i, w in enumerate(vocab[:-1])}))
    result = _import(SNAPSHOT, tmp_path / "out", "--format", "ladder", "--data", str(data))
    _one_error_line(result, "word embedding of 24 rows", "holds 23 ids")


def test_files_of_other_formats_are_one_line(tmp_path):
    result = _import(FIXTURES / "vsepp_checkpoint.pth.tar", tmp_path / "out", "--format", "ladder")
    _one_error_line(result, "expected a ladder-code snapshot", "found a dict with keys ['Eiters'")
    result = _import(SNAPSHOT, tmp_path / "out", "--format", "vsepp")
    _one_error_line(result, "expected a VSE++ checkpoint", "found a list")
    state = load_torch_file(SNAPSHOT)
    state[0]["rnn.weight_ih_l0"] = torch.zeros(64, 300)  # an LSTM's four gates
    buffer = io.BytesIO()
    torch.save(state, buffer)
    (tmp_path / "lstm.pth").write_bytes(buffer.getvalue())
    result = _import(tmp_path / "lstm.pth", tmp_path / "out", "--format", "ladder")
    _one_error_line(result, "model 'rnn.weight_ih_l0': expected shape (48, 300)", "found (64, 300)")
