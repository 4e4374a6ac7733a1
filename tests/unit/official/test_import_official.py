"""`vse-ray import`: a VSE∞ checkpoint written by the released code's own save routine gives the released
forward's similarities; foreign, truncated and mismatched files are refused in one line."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from mlflow import MlflowClient
from typer.testing import CliRunner

from tests.support import tiny_store
from vse_ray.checkpoint_files import load_checkpoint
from vse_ray.cli.main import app
from vse_ray.evaluation.evaluate import CHECKPOINT_EXPERIMENT
from vse_ray.models import rebuild_model
from vse_ray.official.released import DATA_PARALLEL, without_data_parallel
from vse_ray.official.torch_file import load_torch_file
from vse_ray.tracking import metric_keys, resolve_tracking_uri

FIXTURES = Path(__file__).parents[2] / "fixtures" / "official"
RELEASED = FIXTURES / "vse_inf_bigru_checkpoint.pth"


# (format, checkpoint written by the released code's save routine, the released forward's similarities)
RELEASED_FILES = {
    "vse_infty_bigru": ("vse_inf_bigru_checkpoint.pth", "vse_inf_bigru_official.npz"),
    "vse_infty_bert": ("vse_inf_bert_checkpoint.pth", "vse_inf_bert_official.npz"),
    "vsepp": ("vsepp_checkpoint.pth.tar", "vsepp_official.npz"),
    "scan": ("scan_t2i_lse_checkpoint.pth.tar", "scan_t2i_lse_official.npz"),
    "scan_i2t": ("scan_i2t_avg_checkpoint.pth.tar", "scan_i2t_avg_official.npz"),
    "sgraf": ("sgraf_sgr_checkpoint.pth.tar", "sgraf_sgr_official.npz"),
    "sgraf_saf": ("sgraf_saf_checkpoint.pth.tar", "sgraf_saf_official.npz"),
    "gsmn": ("gsmn_checkpoint.pth.tar", "gsmn_official.npz"),  # dense; images carry the 4 box columns
}
# The tiny BERT of the VSE∞ BERT fixture (README.md beside the fixtures).
TINY_BERT = {
    "vocab_size": 30,
    "hidden_size": 24,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "intermediate_size": 32,
    "max_position_embeddings": 16,
}


def _import(checkpoint: Path, output: Path, *extra: str):
    args = ["import", "--checkpoint", str(checkpoint), "--output", str(output), *extra]
    return CliRunner().invoke(app, args)


def _tiny_bert(folder: Path) -> Path:
    """A local BERT folder of the fixture's config: the weights the import replaces, and its wordpieces."""
    transformers = pytest.importorskip("transformers")
    transformers.BertModel(transformers.BertConfig(**TINY_BERT)).save_pretrained(folder)
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(25)]
    (folder / "vocab.txt").write_text("\n".join(words) + "\n")
    return folder


def _one_error_line(result, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 2 and lines[0].startswith("error: ") and "--debug" in lines[1], result.output
    assert all(f in lines[0] for f in fragments), lines[0]


@pytest.mark.parametrize("case", sorted(RELEASED_FILES))
def test_imported_model_gives_the_released_similarities(tmp_path, case):
    checkpoint, official = RELEASED_FILES[case]
    fmt = case.split("_i2t")[0].removesuffix("_saf")
    extra = ["--bert-path", str(_tiny_bert(tmp_path / "bert"))] if fmt == "vse_infty_bert" else []
    result = _import(FIXTURES / checkpoint, tmp_path / "imported", "--format", fmt, *extra)
    assert result.exit_code == 0, result.output
    state = load_checkpoint(tmp_path / "imported")
    assert state["imported_from"]["format"] == fmt
    model = rebuild_model(state).eval()
    expected = np.load(FIXTURES / official)
    lengths = torch.from_numpy(expected["lengths"])
    with torch.no_grad():
        images = model.encode_images(torch.from_numpy(expected["images"]))
        captions = model.encode_captions(torch.from_numpy(expected["captions"]), lengths)
        sims = model.score(images, captions, lengths).numpy()
    assert sims.dtype == np.float32 and sims.shape == expected["sims"].shape == (4, 6)
    print(f"\n{case}: max |diff| {np.abs(sims - expected['sims']).max():.1e}")
    np.testing.assert_allclose(sims, expected["sims"], rtol=0, atol=1e-5)


def test_format_help_names_every_format():
    from vse_ray.cli.import_checkpoint import FORMAT_HELP
    from vse_ray.official import FORMATS

    assert [part.split(":")[0] for part in FORMAT_HELP.split("; ")] == list(FORMATS)


def test_official_names_round_trip():
    """Error messages name a missing tensor by its released name: the renaming's inverse."""
    from vse_ray.official import FORMATS

    for case, (checkpoint, _) in RELEASED_FILES.items():
        fmt = FORMATS[case.split("_i2t")[0].removesuffix("_saf")]
        parts = load_torch_file(FIXTURES / checkpoint)["model"]
        for part, tensors in zip(fmt.parts, parts, strict=True):
            for name in without_data_parallel(tensors):
                key = fmt.names.ours(f"{part}.{name}")
                assert key is None or fmt.names.official(key) == f"{part}.{name}", (case, name)


@pytest.mark.parametrize("fmt", ["vse_infty_bigru", "vse_infty_bert"])
def test_data_parallel_prefix_is_optional(tmp_path, fmt):
    """VSE∞'s train.py saves its encoders inside nn.DataParallel (every name starts with 'module.', as in the
    BERT fixture); a file saved without the wrapper (the BiGRU fixture) imports to the same model."""
    checkpoint = FIXTURES / RELEASED_FILES[fmt][0]
    raw = load_torch_file(checkpoint)
    wrapped = all(k.startswith(DATA_PARALLEL) for part in raw["model"] for k in part)
    assert wrapped == (fmt == "vse_infty_bert")
    raw["model"] = [
        without_data_parallel(part) if wrapped else {DATA_PARALLEL + k: v for k, v in part.items()}
        for part in raw["model"]
    ]
    torch.save(raw, tmp_path / "resaved.pth")
    extra = ["--format", fmt, *(["--bert-path", str(_tiny_bert(tmp_path / "bert"))] if wrapped else [])]
    for source, output in ((checkpoint, "original"), (tmp_path / "resaved.pth", "resaved")):
        result = _import(source, tmp_path / output, *extra)
        assert result.exit_code == 0, result.output
    original, resaved = (load_checkpoint(tmp_path / name)["model"] for name in ("original", "resaved"))
    assert list(original) == list(resaved)
    assert all(torch.equal(original[k], resaved[k]) for k in original)


def _data_of_vocab_size(tmp_path, monkeypatch, size: int) -> Path:
    """The tiny store with the fixture's img_dim, its vocabulary filled up to `size` ids."""
    words = tiny_store._vocab()
    words.update({f"filler{i}": i for i in range(max(words.values()) + 1, size)})
    monkeypatch.setattr(tiny_store, "FEATURE_DIM", 12)
    monkeypatch.setattr(tiny_store, "_vocab", lambda: words)
    data = tiny_store.write_tiny_store(tmp_path / "regions", regions=5)
    assert len(json.loads((data / "vocab.json").read_text())) == size
    return data


def test_imported_checkpoint_evaluates_end_to_end(tmp_path, monkeypatch):
    data = _data_of_vocab_size(tmp_path, monkeypatch, 20)  # the fixture's 21 rows: 20 words and <mask>
    assert _import(RELEASED, tmp_path / "imported", "--data", str(data)).exit_code == 0
    args = ["evaluate", "--run", str(tmp_path / "imported"), "--data", str(data), "--split", "test"]
    result = CliRunner().invoke(app, [*args, "--output-dir", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "reports" / "imported_test_full.json").is_file()
    # one MLflow run for the checkpoint, named after it, with the model and its origin
    client = MlflowClient(resolve_tracking_uri(None, str(tmp_path / "out")))
    (run,) = client.search_runs([client.get_experiment_by_name(CHECKPOINT_EXPERIMENT).experiment_id])
    assert run.info.run_name.startswith("imported-") and run.info.status == "FINISHED"
    assert run.data.params["model"] == "vse_inf" and run.data.params["imported_format"] == "vse_infty_bigru"
    assert metric_keys.TEST_RSUM in run.data.metrics


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
        (_set_opt(no_txtnorm=True), ["expected opt.no_txtnorm False, found True"]),
        (lambda raw: raw["model"][1].pop("rnn.bias_hh_l0"), ["expected txt_enc 'rnn.bias_hh_l0'", "none"]),
        (
            lambda raw: raw["model"][1].update({"bert.embeddings.word_embeddings.weight": torch.zeros(2, 2)}),
            ["expected a BiGRU text encoder", "found a BERT one"],
        ),
        (lambda raw: raw["model"].append({}), ["expected a VSE∞ checkpoint", "(SGRAF?)"]),
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


def test_vocabulary_of_another_size_is_refused(tmp_path, monkeypatch):
    data = _data_of_vocab_size(tmp_path, monkeypatch, 25)
    result = _import(RELEASED, tmp_path / "out", "--data", str(data))
    _one_error_line(result, "word embedding of 21 rows", "vocab.json holds 25 ids", "--vocab FILE")
    assert not (tmp_path / "out").exists()
    assert _import(RELEASED, tmp_path / "imported").exit_code == 0  # no --data: evaluate checks it
    args = ["evaluate", "--run", str(tmp_path / "imported"), "--data", str(data), "--split", "test"]
    result = CliRunner().invoke(app, [*args, "--output-dir", str(tmp_path / "o")])
    _one_error_line(result, "imported: word embedding of 21 rows", "expected 25 or 26 (with <mask>)")


@pytest.mark.parametrize(
    ("checkpoint", "fmt", "fragments"),
    [
        ("sgraf_sgr_checkpoint.pth.tar", "vsepp", ["expected a VSE++ checkpoint", "(SGRAF?)"]),
        ("vsepp_checkpoint.pth.tar", "sgraf", ["expected an SGRAF checkpoint", "(VSE++, VSE∞ or SCAN?)"]),
        ("vsepp_checkpoint.pth.tar", "scan", ["'opt' lacks 'raw_feature_norm'", "options of scan"]),
        ("scan_t2i_lse_checkpoint.pth.tar", "vsepp", ["txt_enc holds 'rnn.weight_ih_l0_reverse'", "vsepp"]),
        ("vse_inf_bert_checkpoint.pth", "vse_infty_bigru", ["found a BERT one", "--format vse_infty_bert"]),
        ("vse_inf_bigru_checkpoint.pth", "vse_infty_bert", ["found a BiGRU one", "--format vse_infty_bigru"]),
    ],
)
def test_a_file_of_another_format_is_one_line(tmp_path, checkpoint, fmt, fragments):
    result = _import(FIXTURES / checkpoint, tmp_path / "out", "--format", fmt)
    _one_error_line(result, checkpoint, *fragments)
    assert not (tmp_path / "out").exists()


def _import_changed(tmp_path: Path, checkpoint: str, fmt: str, **opt: str):
    """Import a copy of `checkpoint` whose options `opt` are changed."""
    raw = load_torch_file(FIXTURES / checkpoint)
    for name, value in opt.items():
        setattr(raw["opt"], name, value)
    torch.save(raw, tmp_path / "changed.pth")
    return _import(tmp_path / "changed.pth", tmp_path / "out", "--format", fmt)


def test_sgraf_options_without_counterpart_are_one_line(tmp_path):
    result = _import_changed(tmp_path, "sgraf_sgr_checkpoint.pth.tar", "sgraf", module_name="SGRAF")
    _one_error_line(result, "expected opt.module_name 'SGR' or 'SAF', found 'SGRAF'")


@pytest.mark.parametrize("variant", ["f30k", "coco"])
def test_a_vsrn_checkpoint_gives_the_released_similarities(tmp_path, variant):
    """VSRN's train.py saves its two encoders (not the caption decoder, which only trains): imported, the
    model's image head follows opt.data_name and scores as the released forward did."""
    checkpoint = FIXTURES / f"vsrn_{variant}_checkpoint.pth.tar"
    result = _import(checkpoint, tmp_path / "imported", "--format", "vsrn")
    assert result.exit_code == 0, result.output
    state = load_checkpoint(tmp_path / "imported")
    assert state["model_args"]["variant"] == variant
    model = rebuild_model(state).eval()
    expected = np.load(FIXTURES / "vsrn_forward.npz")
    lengths = torch.from_numpy(expected["lengths"])
    with torch.no_grad():
        images = model.encode_images(torch.from_numpy(expected["images"]))
        captions = model.encode_captions(torch.from_numpy(expected["tokens"]), lengths)
        sims = model.score(images, captions, lengths).numpy()
    print(f"\nvsrn {variant}: max |diff| {np.abs(sims - expected[f'{variant}/sims']).max():.1e}")
    np.testing.assert_allclose(sims, expected[f"{variant}/sims"], rtol=0, atol=1e-5)
    from vse_ray.official import FORMATS

    names = FORMATS["vsrn"].names
    for part, tensors in zip(("img_enc", "txt_enc"), load_torch_file(checkpoint)["model"], strict=True):
        assert all(names.official(names.ours(f"{part}.{n}") or "") == f"{part}.{n}" for n in tensors)


def test_a_vsrn_checkpoint_of_another_data_set_is_one_line(tmp_path):
    result = _import_changed(tmp_path, "vsrn_f30k_checkpoint.pth.tar", "vsrn", data_name="f8k_precomp")
    _one_error_line(result, "expected opt.data_name 'f30k_precomp' or 'coco_precomp', found 'f8k_precomp'")
