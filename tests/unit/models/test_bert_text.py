"""VSE∞ with BERT (tiny random config): wordpieces as the reference forms them, the encoder against its
equations, the weights' folder, and one epoch of training and evaluation through the engine."""

from __future__ import annotations

import shutil
from functools import partial

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from tests.support.local_reporter import LocalReporter
from vse_ray.checkpoint_files import load_checkpoint
from vse_ray.cli.main import app
from vse_ray.data.store.split_data import pad_tokens
from vse_ray.evaluation.evaluate import evaluate_run
from vse_ray.models import build_model
from vse_ray.models.bert_text import bert_folder
from vse_ray.train.caption_aug import CaptionAugment
from vse_ray.train.epoch_loop import run_training
from vse_ray.train.recipe import load_recipe

TEXTS = ["A red box.", "the Green boxes here", "one ball, purple", "zebra"]


@pytest.fixture(scope="module")
def model(tiny_bert_dir):
    torch.manual_seed(0)
    return build_model(
        "vse_inf",
        vocab_size=30,
        feature_dim=12,
        embed_dim=8,
        text_encoder="bert",
        bert_path=str(tiny_bert_dir),
    )


def test_wordpieces_are_cls_basic_tokens_pieces_sep(model, tiny_bert_dir):
    """The reference's route: BERT's basic tokenizer (lower case, split at spaces and punctuation), each
    token's wordpieces, then [CLS] ... [SEP], here through transformers' Python tokenizer."""
    from transformers.models.bert import BertTokenizerLegacy

    legacy = BertTokenizerLegacy(vocab_file=str(tiny_bert_dir / "vocab.txt"))
    expected = [
        ["[CLS]"]
        + [
            p
            for word in legacy.basic_tokenizer.tokenize(t)
            for p in legacy.wordpiece_tokenizer.tokenize(word)
        ]
        + ["[SEP]"]
        for t in TEXTS
    ]
    ids = model.caption_ids([np.array([2, 3])] * len(TEXTS), TEXTS)  # stored vocabulary ids are ignored
    assert [legacy.convert_ids_to_tokens(i.tolist()) for i in ids] == expected
    assert expected[1] == ["[CLS]", "the", "green", "box", "##es", "here", "[SEP]"]
    assert expected[3] == ["[CLS]", "[UNK]", "[SEP]"]
    space = model.caption_space
    assert space.vocab_size == len(legacy.vocab) and space.mask_id == legacy.vocab["[MASK]"]
    assert [legacy.ids_to_tokens[i] for i in np.flatnonzero(space.continues)] == ["##es", "##s"]


def test_augmentation_changes_the_pieces_only(model):
    seen = []

    def drop_all(pieces):
        seen.extend(pieces)
        return [p[:0] for p in pieces]

    ids = model.caption_ids([], TEXTS[:2], drop_all)
    cls, sep = model.text_encoder.wordpieces.cls_id, model.text_encoder.wordpieces.sep_id
    assert [i.tolist() for i in ids] == [[cls, sep], [cls, sep]]
    assert len(seen[1]) == 5  # the, green, box, ##es, here


def test_training_augmentation_draws_in_the_wordpiece_space(model):
    """The run's augmentation moved into the model's ids: all words masked gives [CLS] [MASK]... [SEP]."""
    pieces = model.text_encoder.wordpieces
    augment = CaptionAugment(1.0, 0.0, 0.0, 99, 100).in_space(model.caption_space)
    ids = model.caption_ids([], TEXTS[:2], partial(augment, rng=np.random.default_rng(0)))
    assert [i.tolist() for i in ids] == [
        [pieces.cls_id, *[pieces.mask_id] * 4, pieces.sep_id],  # a red box .
        [pieces.cls_id, *[pieces.mask_id] * 5, pieces.sep_id],  # the green box ##es here
    ]


@torch.no_grad()
def test_encoder_is_bert_linear_gpo_l2(model):
    """encode_captions against the equations, caption by caption without padding; in eval mode a
    caption's embedding does not depend on the others of its batch."""
    model.eval()
    ids = model.caption_ids([], TEXTS)
    tokens, lengths = pad_tokens(ids)
    got = model.encode_captions(tokens, lengths)
    enc = model.text_encoder
    for row, caption in enumerate(ids):
        hidden = enc.bert(torch.from_numpy(caption)[None]).last_hidden_state
        pooled = enc.gpo(enc.linear(hidden), torch.tensor([len(caption)]))[0]
        assert torch.allclose(got[row], pooled / pooled.norm(), atol=1e-6)
    model.train()


def test_bert_parameters_have_one_prefix_and_learn(model):
    names = [n for n, _ in model.named_parameters()]
    bert = [n for n in names if n.startswith("text_encoder.bert.")]
    assert len(bert) == len(list(model.text_encoder.bert.parameters())) > 0
    assert not any("pooler" in n for n in names)  # the reference never uses BERT's pooled output
    regions = torch.randn(3, 5, 12)
    tokens, lengths = pad_tokens(model.caption_ids([], TEXTS[:3]))
    model.zero_grad()
    model(regions, tokens, lengths).sum().backward()
    assert all(p.grad is not None for p in model.parameters())


def test_weights_folder_or_cache_else_one_line(tmp_path, tiny_bert_dir, monkeypatch):
    from huggingface_hub import constants

    with pytest.raises(
        FileNotFoundError, match=r"model_params.bert_path .*empty: no config.json; .*hf download"
    ):
        bert_folder(str(tmp_path / "empty"))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(FileNotFoundError) as err:
        bert_folder("")
    assert "no bert-base-uncased in the Hugging Face cache" in str(err.value) and "\n" not in str(err.value)
    snapshot = tmp_path / "hub" / "models--bert-base-uncased" / "snapshots" / "abc123"
    shutil.copytree(tiny_bert_dir, snapshot)
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text("abc123")
    assert bert_folder("") == snapshot


def test_train_without_weights_stops_before_anything_starts(tiny_region_dir, tmp_path):
    out = tmp_path / "out"
    args = ["train", "--data", str(tiny_region_dir), "--model", "vse_inf", "--output-dir", str(out)]
    result = CliRunner().invoke(
        app, [*args, "--set", "model_params.text_encoder=bert", "--set", f"model_params.bert_path={tmp_path}"]
    )
    assert result.exit_code == 2, result.output
    assert result.output.splitlines()[0].startswith(
        f"error: model_params.bert_path {tmp_path}: no config.json"
    )
    assert not out.exists()


def test_lseh_recipe_trains_bert_vse_inf_one_epoch_and_evaluates(tiny_region_dir, tiny_bert_dir, tmp_path):
    """vse_inf_lseh_f30k (BERT, AdamW, BERT at 0.1x lr) for one epoch on tiny regions through the engine."""
    tiny = ["batch_size=16", "embed_dim=32", "epochs=1", "cs_ks=[5, 10]", "ncs_ks=[1, 5]"]
    recipe = load_recipe(
        "vse_inf_lseh_f30k",
        str(tiny_region_dir),
        [*tiny, f"model_params.bert_path={tiny_bert_dir}"],
        output_dir=str(tmp_path / "o"),
    )
    reporter = LocalReporter(tmp_path / "ckpt")
    run_training(recipe.checked, reporter)
    assert reporter.history[0]["rsum"] > 0 and np.isfinite(reporter.history[0]["train_loss"])
    groups = load_checkpoint(str(reporter.checkpoints[0]))["optimizer"]["param_groups"]
    assert {g["name"]: g["lr"] for g in groups} == pytest.approx({"text_encoder.bert.": 8e-5, "": 8e-4})
    report = evaluate_run(str(reporter.checkpoints[0]), split="test", output_dir=str(tmp_path / "e"))
    assert report.metrics["rsum"] > 0
