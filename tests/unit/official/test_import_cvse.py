"""`vse-ray import --format cvse`: a CVSE checkpoint written by BruceW91/CVSE's own `save_checkpoint` gives
the released evaluation's scores (label completion, 0.95 · fused + 0.05 · consensus) on the split of
`cvse_released.npz`; what the file lacks (concept words and vectors, the vocabulary) is asked for in one line.
How the fixtures were made: tests/fixtures/official/README.md."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from tests.parity.test_cvse_released import fixture_split, write_wordnet
from tests.support import tiny_store
from tests.unit.official.test_import_official import _import, _one_error_line
from vse_ray.checkpoint_files import load_checkpoint
from vse_ray.cli.main import app
from vse_ray.evaluation.embed import split_similarities
from vse_ray.models import rebuild_model
from vse_ray.official import FORMATS
from vse_ray.official.torch_file import load_torch_file

FIXTURES = Path(__file__).parents[2] / "fixtures" / "official"
CHECKPOINT = FIXTURES / "cvse_checkpoint.pth.tar"


@pytest.fixture(scope="module")
def split_arrays() -> dict[str, np.ndarray]:
    """The split, vocabulary, concepts and WordNet entries the checkpoint was evaluated on."""
    with np.load(FIXTURES / "cvse_released.npz") as data:
        return {k: data[k] for k in data.files}


@pytest.fixture
def released_files(tmp_path: Path, split_arrays: dict[str, np.ndarray]) -> dict[str, Path]:
    """The files the released run read, as it lays them out: the concept folder (words, counts, GloVe
    pickle), a data folder with the released vocabulary, and a WordNet folder."""
    concepts = tmp_path / "Concept_annotations_f30k"
    concepts.mkdir()
    words = split_arrays["concepts"].tolist()
    (concepts / "category_concepts.json").write_text(json.dumps({w: i for i, w in enumerate(words)}))
    counts = {"nums": split_arrays["concept_counts"], "adj_all": split_arrays["concept_cooccurrence"]}
    (concepts / "f30k_adj_concepts.pkl").write_bytes(pickle.dumps(counts))
    vectors = concepts / "f30k_concepts_glove_word2vec.pkl"
    vectors.write_bytes(pickle.dumps(split_arrays["init/concept_inputs"].astype(np.float64)))
    data = tmp_path / "data"
    data.mkdir()
    vocab = {word: token for token, word in enumerate(split_arrays["vocab"].tolist())}
    (data / "vocab.json").write_text(json.dumps(vocab))
    wordnet = write_wordnet(split_arrays, tmp_path / "wordnet")
    return {"concepts": concepts, "concept-vectors": vectors, "data": data, "wordnet": wordnet}


def _import_cvse(checkpoint: Path, output: Path, files: dict[str, Path], *leave_out: str):
    given = {name: path for name, path in files.items() if name not in leave_out}
    flags = [part for name, path in given.items() for part in (f"--{name}", str(path))]
    return _import(checkpoint, output, "--format", "cvse", *flags)


def _resaved(tmp_path: Path, **opt: object) -> Path:
    """A copy of the checkpoint with options `opt` changed."""
    raw = load_torch_file(CHECKPOINT)
    for name, value in opt.items():
        setattr(raw["opt"], name, value)
    torch.save(raw, tmp_path / "changed.pth.tar")
    return tmp_path / "changed.pth.tar"


@pytest.mark.parametrize("dataset", ["f30k", "coco"])
def test_imported_checkpoint_gives_the_released_evaluation(tmp_path, split_arrays, released_files, dataset):
    """Evaluated as `evaluation.evalrank` does for the checkpoint's data_name (f30k: α 0.85; coco: α 0.9 and
    its completion rule): the imported model's split similarities equal the released scores."""
    checkpoint = CHECKPOINT if dataset == "f30k" else _resaved(tmp_path, data_name="coco_precomp")
    result = _import_cvse(checkpoint, tmp_path / "imported", released_files)
    assert result.exit_code == 0, result.output
    state = load_checkpoint(tmp_path / "imported")
    assert state["imported_from"]["format"] == "cvse"
    assert state["model_args"]["reading"] == "released" and state["model_args"]["eval_dataset"] == dataset
    model = rebuild_model(state).eval()
    with torch.no_grad():
        sims = split_similarities(model, fixture_split(split_arrays), 16, torch.device("cpu"))
    expected = np.load(FIXTURES / "cvse_checkpoint_official.npz")[f"{dataset}/score"]
    diff = float(np.abs(sims - expected).max())
    print(f"\ncvse import ({dataset}): max |diff| {diff:.1e}")
    assert sims.shape == expected.shape == (8, 40) and diff < 1e-5


def test_official_names_round_trip():
    """Error messages name a missing tensor by its released name: the renaming's inverse."""
    fmt = FORMATS["cvse"]
    for part, tensors in zip(fmt.parts, load_torch_file(CHECKPOINT)["model"], strict=True):
        for name in tensors:
            key = fmt.names.ours(f"{part}.{name}")
            assert key is None or fmt.names.official(key) == f"{part}.{name}", name


@pytest.mark.parametrize(
    ("leave_out", "fragments"),
    [
        ("concepts", ["opt.concept_name", "category_concepts.json", "give --concepts"]),
        ("concept-vectors", ["opt.inp_name", "glove_word2vec.pkl", "give --concept-vectors"]),
        ("data", ["give --data"]),
    ],
)
def test_a_file_the_checkpoint_lacks_is_asked_for_in_one_line(tmp_path, released_files, leave_out, fragments):
    result = _import_cvse(CHECKPOINT, tmp_path / "out", released_files, leave_out)
    _one_error_line(result, CHECKPOINT.name, *fragments)
    assert not (tmp_path / "out").exists()


def test_concepts_of_another_count_are_one_line(tmp_path, released_files):
    result = _import_cvse(_resaved(tmp_path, num_attribute=9), tmp_path / "out", released_files)
    _one_error_line(result, "changed.pth.tar", "C_GCN 'adj_all' of shape (9, 9)", "found (8, 8)")
    folder = released_files["concepts"]
    words = json.loads((folder / "category_concepts.json").read_text())
    (folder / "category_concepts.json").write_text(json.dumps({**words, "hat": 8}))
    (folder / "f30k_adj_concepts.pkl").write_bytes(pickle.dumps({"nums": np.ones(9), "adj_all": np.eye(9)}))
    result = _import_cvse(CHECKPOINT, tmp_path / "out", released_files)
    _one_error_line(result, "opt.num_attribute is 8", "holds 9 concepts")


@pytest.mark.parametrize(
    ("opt", "fragments"),
    [
        ({"feature_fuse_type": "concat"}, ["expected opt.feature_fuse_type 'weight_sum'", "found 'concat'"]),
        ({"data_name": "f8k_precomp"}, ["expected opt.data_name 'f30k_precomp' or 'coco_precomp'"]),
    ],
)
def test_options_without_counterpart_are_one_line(tmp_path, released_files, opt, fragments):
    _one_error_line(_import_cvse(_resaved(tmp_path, **opt), tmp_path / "out", released_files), *fragments)


def test_a_checkpoint_of_another_model_is_one_line(tmp_path, released_files):
    result = _import_cvse(FIXTURES / "vsepp_checkpoint.pth.tar", tmp_path / "out", released_files)
    _one_error_line(result, "expected a CVSE checkpoint", "(VSE++, VSE∞ or SCAN?)")


def test_imported_checkpoint_evaluates_end_to_end(tmp_path, monkeypatch, released_files):
    """`vse-ray evaluate --run` of the import on a precompute folder of 36 regions and 31 token ids."""
    words = tiny_store._vocab()
    words.update({f"filler{i}": i for i in range(max(words.values()) + 1, 31)})
    monkeypatch.setattr(tiny_store, "FEATURE_DIM", 12)
    monkeypatch.setattr(tiny_store, "_vocab", lambda: words)
    data = tiny_store.write_tiny_store(tmp_path / "regions", regions=36)
    files = {**released_files, "data": data}
    assert _import_cvse(CHECKPOINT, tmp_path / "imported", files).exit_code == 0
    args = ["evaluate", "--run", str(tmp_path / "imported"), "--data", str(data), "--split", "test"]
    result = CliRunner().invoke(app, [*args, "--output-dir", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "reports" / "imported_test_full.json").is_file()
