"""CVSE in vse_ray: caption concept labels, every loss trains it, a recipe's epoch, train_fraction."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pytest
import torch
from typer.testing import CliRunner

from tests.support.local_reporter import LocalReporter
from tests.support.tiny_store import tiny_config
from tests.unit.data.test_lemmas import write_wordnet
from vse_ray.cli.main import app
from vse_ray.data.precompute.concepts import concepts_of_split
from vse_ray.data.store.readers import load_captions, load_vocab
from vse_ray.data.store.split_data import load_split
from vse_ray.evaluation.embed import split_similarities
from vse_ray.evaluation.evaluate import evaluate_run
from vse_ray.losses import LOSS_NAMES, make_loss
from vse_ray.models import build_model
from vse_ray.models.training_output import TrainingOutput
from vse_ray.train.batches import BatchBuilder, TableBatches
from vse_ray.train.epoch_loop import clipped_parameters, run_training, train_step
from vse_ray.train.model_factory import model_data
from vse_ray.train.recipe import load_recipe
from vse_ray.train.train_captions import image_fraction
from vse_ray.train.training_data import TrainingData

TINY_CVSE = {"n_regions": 5, "n_concepts": 6, "concept_dim": 8}


@pytest.fixture(scope="module")
def loaded(tiny_region_dir, tmp_path_factory):
    cfg = tiny_config(tiny_region_dir, tmp_path_factory.mktemp("out"), model="cvse", loss="sam")
    cfg.model_params = dict(TINY_CVSE)
    return TrainingData.load(cfg, "cider"), load_captions(str(tiny_region_dir), "train"), cfg


def test_caption_labels_are_the_concept_words_it_holds(loaded, tiny_region_dir):
    data, captions, _ = loaded
    model = build_model("cvse", **data.model_args, **data.model_inputs)
    graph = concepts_of_split(str(tiny_region_dir), 6)
    vocab = load_vocab(str(tiny_region_dir))
    tokens = [np.asarray(t) for t in captions["tokens"].to_pylist()[:8]]
    padded = torch.zeros(8, max(map(len, tokens)), dtype=torch.int64)
    for row, t in enumerate(tokens):
        padded[row, : len(t)] = torch.from_numpy(t)
    labels = model.caption_labels(padded, torch.tensor([len(t) for t in tokens]))
    for row, t in enumerate(tokens):
        words = {w for w, i in vocab.items() if i in set(t.tolist())}
        assert {graph.words[k] for k in np.flatnonzero(labels[row].numpy())} == words & set(graph.words)
    assert model.adjacency.shape == (6, 6) and not torch.equal(model.adjacency, torch.eye(6))


@pytest.mark.parametrize("loss_name", LOSS_NAMES)
def test_every_loss_trains_cvse(loaded, loss_name):
    data, captions, _ = loaded
    torch.manual_seed(0)
    model = build_model("cvse", **data.model_args, **data.model_inputs)
    loss = make_loss(loss_name)
    builder = BatchBuilder(data.train_images, loss.relevance_source, data.references)
    batch = builder(next(iter(TableBatches(captions, 16, 0).epoch_batches(1))))
    output = model(batch.images.float(), batch.tokens, batch.lengths)  # regions arrive as stored: float16
    assert isinstance(output, TrainingOutput) and output.sims.shape == (16, 16)
    assert set(output.extra_losses) == {"instance_rank", "consensus_rank", "concept_kl"}
    before = [p.detach().clone() for p in model.parameters()]
    value = train_step(model, loss, torch.optim.Adam(model.parameters(), lr=1e-3), batch, 2.0)
    assert torch.isfinite(value) and value > 0
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    gcn = {id(p) for p in model.gcn.parameters()}
    assert gcn and not gcn & {id(p) for p in clipped_parameters(model)}  # as released: the GCN is not clipped


@pytest.fixture(scope="module")
def wordnet(tiny_region_dir, tmp_path_factory):
    """A WordNet folder in which every word of the tiny vocabulary is a noun."""
    words = sorted(load_vocab(str(tiny_region_dir)))
    return write_wordnet(tmp_path_factory.mktemp("wordnet"), words, [])


def test_released_reading_fuses_clips_and_evaluates_as_released(loaded, wordnet, tiny_region_dir):
    _, captions, cfg = loaded
    cfg = dataclasses.replace(cfg, model_params={**TINY_CVSE, "reading": "released", "wordnet": str(wordnet)})
    data = TrainingData.load(cfg, "cider")
    torch.manual_seed(0)
    model = build_model("cvse", **data.model_args, **data.model_inputs)
    assert (model.fuse_alpha, model.eval_alpha) == (0.85, 0.85)
    coco = build_model("cvse", **{**data.model_args, "eval_dataset": "coco"}, **data.model_inputs)
    assert coco.eval_alpha == 0.9
    loss = make_loss("vsepp")
    builder = BatchBuilder(data.train_images, loss.relevance_source, data.references)
    batch = builder(next(iter(TableBatches(captions, 16, 0).epoch_batches(1))))
    assert torch.isfinite(train_step(model, loss, torch.optim.Adam(model.parameters(), lr=1e-3), batch, 2.0))
    gcn = {id(p) for p in model.gcn.parameters()}
    assert gcn and gcn <= {id(p) for p in clipped_parameters(model)}  # BruceW91/CVSE clips the GCN too
    split = load_split(str(tiny_region_dir), "test", raw=False)
    sims = split_similarities(model, split, 16, torch.device("cpu"))
    with torch.no_grad():
        img = model.encode_images(split.images.tensor_rows(slice(0, 4)))
    assert img.shape == (4, 2 * 32) and sims.shape == (len(split.images.image_ids), len(split.tokens))
    assert np.isfinite(sims).all() and np.abs(sims).max() <= 1 + 1e-5


@pytest.mark.parametrize("reading", ["sam_copy", "released"])
def test_one_epoch_of_the_low_data_recipe_trains_and_evaluates(tiny_region_dir, wordnet, tmp_path, reading):
    tiny = ["batch_size=16", "embed_dim=32", "word_dim=16", "epochs=1", "cs_ks=[5, 10]", "ncs_ks=[1, 5]"]
    tiny += [f"model_params.{k}={v}" for k, v in TINY_CVSE.items()]
    tiny += [f"model_params.reading={reading}", f"model_params.wordnet={wordnet}"]
    cfg = load_recipe("cvse_sam_f30k_25pct", str(tiny_region_dir), tiny, output_dir=str(tmp_path)).config
    assert cfg.train_fraction == 0.25 and cfg.to_flat_dict()["train_fraction"] == 0.25  # an MLflow param
    reporter = LocalReporter(tmp_path / "ckpt")
    run_training(cfg.checked(), reporter)
    assert np.isfinite(reporter.history[0]["train_loss"]) and reporter.history[0]["rsum"] > 0
    report = evaluate_run(str(reporter.checkpoints[0]), split="test", output_dir=str(tmp_path / "e"))
    assert report.metrics["rsum"] > 0


def test_train_fraction_draws_images_by_seed():
    table = pa.table({"image_id": np.repeat(np.arange(40), 5), "caption_id": np.arange(200)})
    ids = [np.unique(image_fraction(table, 0.25, seed)["image_id"].to_numpy()) for seed in (0, 0, 1)]
    assert len(ids[0]) == 10 and np.array_equal(ids[0], ids[1]) and not np.array_equal(ids[0], ids[2])
    assert image_fraction(table, 0.25, 0).num_rows == 50  # every caption of a drawn image
    assert image_fraction(table, 1.0, 0) is table


def test_concept_vectors_load_glove(loaded, tiny_region_dir, tmp_path):
    data, _, cfg = loaded
    words = concepts_of_split(str(tiny_region_dir), 6).words
    glove = tmp_path / "glove.txt"
    glove.write_text(
        "".join(f"{w} " + " ".join(str(i + j / 10) for j in range(8)) + "\n" for i, w in enumerate(words))
    )
    cfg = dataclasses.replace(cfg, concept_vectors=str(glove))
    vocab, size = load_vocab(str(tiny_region_dir)), data.model_args["vocab_size"]
    model = build_model("cvse", **data.model_args, **model_data(cfg, vocab, size))
    assert model.concept_inputs[3, 2].item() == pytest.approx(3.2)
    with pytest.raises(ValueError, match="size 8, concept_dim 4"):
        model_data(dataclasses.replace(cfg, model_params={**TINY_CVSE, "concept_dim": 4}), vocab, size)


def test_a_rebuilt_model_reads_no_training_folder(loaded):
    data, _, _ = loaded
    model = build_model("cvse", **data.model_args, **data.model_inputs)
    rebuilt = build_model("cvse", **data.model_args)  # as from a checkpoint: placeholders, then the state
    rebuilt.load_state_dict(model.state_dict())
    for name in ("adjacency", "concept_inputs", "token_concepts"):
        assert torch.equal(getattr(rebuilt, name), getattr(model, name))
    assert "data_dir" not in data.model_args and "concepts" not in data.model_args


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        (["--train-fraction", "1.5"], "train_fraction: must be a number in (0, 1], got 1.5"),
        (["--concept-vectors", "nope.txt"], "concept_vectors: no such file: nope.txt"),
        ([], "concepts: 300 requested, the training captions mention 10 words"),
        (["--set", "model_params.concepts=nope"], "concepts nope: no such file or folder"),
        (["--set", "model_params.reading=paper"], "reading: 'paper', expected one of ['sam_copy', 'released"),
        (
            ["--set", "model_params.n_concepts=6", "--set", "model_params.reading=released"]
            + ["--set", "model_params.wordnet=nope"],
            "wordnet nope: no index.noun, noun.exc there",
        ),
    ],
)
def test_bad_cvse_options_fail_before_anything_starts(tiny_region_dir, tmp_path, options, fragment):
    args = [
        "train",
        "--data",
        str(tiny_region_dir),
        "--model",
        "cvse",
        "--output-dir",
        str(tmp_path),
        *options,
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and fragment in result.output, result.output
    assert not (tmp_path / "mlflow.db").exists()
