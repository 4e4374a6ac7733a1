"""CVSE's released reading (BruceW91/CVSE) against that code's numbers (tests/fixtures/official/).

`cvse_released.npz` holds a tiny released CVSE model in evaluation mode, a split of 8 images × 5 captions
(texts, the token ids and concept labels the released loader gives them), the training forward (α 0.85) of
one batch with its loss, and the released evaluation for Flickr30K and MS-COCO: the label-completion
neighbours, the completed labels and the final score 0.95 · fused + 0.05 · consensus. It also holds the
WordNet noun entries that decide the lemmas of its words. See the README there for how it was made.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.parity.test_step_parity import FIXTURES, cvse_name
from vse_ray.data.precompute.concepts import token_concept_index
from vse_ray.data.precompute.lemmas import load_noun_lemmatizer
from vse_ray.data.store.split_data import ImageStore, SplitData, pad_tokens
from vse_ray.evaluation.embed import split_similarities
from vse_ray.losses import make_loss
from vse_ray.models import build_model
from vse_ray.models.cvse import CVSEModel
from vse_ray.models.cvse_completion import complete_labels, completion_neighbours
from vse_ray.models.training_output import TrainingOutput

TOLERANCE = 1e-5  # float32
PER_IMAGE = 5


@pytest.fixture(scope="module")
def fixture() -> dict[str, np.ndarray]:
    with np.load(FIXTURES / "cvse_released.npz") as data:
        return {k: data[k] for k in data.files}


def write_wordnet(arrays: dict[str, np.ndarray], folder: Path) -> Path:
    """`folder`, holding the fixture's WordNet noun entries in WordNet's file formats."""
    folder.mkdir(parents=True, exist_ok=True)
    nouns = arrays["wordnet/nouns"].tolist()
    (folder / "index.noun").write_text("".join(f"{noun} n 1 0 1 0 00000000  \n" for noun in nouns))
    (folder / "noun.exc").write_text("".join(f"{line}\n" for line in arrays["wordnet/exceptions"] if line))
    return folder


def fixture_split(arrays: dict[str, np.ndarray]) -> SplitData:
    """The fixture's split: its images, each with 5 captions, in order."""
    n_cap = len(arrays["tokens"])
    return SplitData(
        images=ImageStore(np.arange(n_cap // PER_IMAGE), arrays["images"]),
        tokens=[t[:n] for t, n in zip(arrays["tokens"], arrays["lengths"], strict=True)],
        caption_ids=np.arange(n_cap),
        caption_image_ids=np.arange(n_cap) // PER_IMAGE,
        texts=arrays["texts"].tolist(),
    )


@pytest.fixture(scope="module")
def wordnet(fixture: dict[str, np.ndarray], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A WordNet folder holding the fixture's noun entries."""
    return write_wordnet(fixture, tmp_path_factory.mktemp("wordnet"))


def _model(arrays: dict[str, np.ndarray], wordnet: Path, eval_dataset: str = "f30k") -> CVSEModel:
    meta = json.loads(str(arrays["meta"]))
    params = {**meta["model_params"], "reading": "released", "eval_dataset": eval_dataset}
    params["rank_loss"] = make_loss("vsepp", margin=0.2).from_similarity
    model = build_model("cvse", **meta["sizes"], **params)
    assert isinstance(model, CVSEModel)
    state = model.state_dict()
    for key, value in arrays.items():
        if key.startswith("init/") and (name := cvse_name(key.removeprefix("init/"))) is not None:
            assert state[name].shape == value.shape, key
            state[name] = torch.from_numpy(value)
    vocab = {word: token for token, word in enumerate(arrays["vocab"].tolist())}
    lemmatizer = load_noun_lemmatizer(wordnet)
    words = arrays["concepts"].tolist()
    state["token_concepts"] = torch.from_numpy(token_concept_index(vocab, words, len(vocab), lemmatizer))
    model.load_state_dict(state)
    return model.eval()


def _max_diff(ours: torch.Tensor, theirs: np.ndarray) -> float:
    return float(np.abs(ours.detach().double().numpy() - theirs).max())


def test_lemmas_and_caption_labels_match_the_released_loader(fixture, wordnet) -> None:
    lemmatizer = load_noun_lemmatizer(wordnet)
    assert [lemmatizer.lemma(w) for w in fixture["vocab"].tolist()] == fixture["lemmas"].tolist()
    model = _model(fixture, wordnet)
    tokens, lengths = torch.from_numpy(fixture["tokens"]), torch.from_numpy(fixture["lengths"])
    labels = model.caption_labels(tokens, lengths).numpy()
    np.testing.assert_array_equal(labels, fixture["labels"])
    concepts = fixture["concepts"].tolist()
    assert labels[:, concepts.index("dogs")].sum() == 0 < labels[:, concepts.index("men")].sum()


def test_training_forward_matches_the_released_code(fixture, wordnet) -> None:
    model = _model(fixture, wordnet)
    ids = fixture["forward/ids"]
    images = torch.from_numpy(fixture["images"][ids // PER_IMAGE])
    lengths = torch.from_numpy(fixture["lengths"][ids])
    tokens = torch.from_numpy(fixture["tokens"][ids][:, : int(lengths.max())])
    with torch.no_grad():
        img_instance, img_consensus, img_concepts = model.image_levels(images)
        cap_instance, cap_consensus, cap_concepts = model.caption_levels(tokens, lengths)
        output = model(images, tokens, lengths)
    assert isinstance(output, TrainingOutput) and model.fuse_alpha == fixture["forward/fuse_alpha"] == 0.85
    loss = output.total(make_loss("vsepp", margin=0.2).from_similarity(output.sims))
    ours = {
        "img_instance": img_instance,
        "cap_instance": cap_instance,
        "img_consensus": img_consensus,
        "cap_consensus": cap_consensus,
        "img_fused": model.fuse(img_instance, img_consensus),
        "cap_fused": model.fuse(cap_instance, cap_consensus),
        "img_concepts": img_concepts,
        "cap_concepts": cap_concepts,
    }
    diffs = {k: _max_diff(v, fixture[f"forward/{k}"]) for k, v in ours.items()}
    loss_diff = abs(loss.item() - float(fixture["forward/loss"]))
    print(f"\ncvse released forward max |diff|: {max(diffs.values()):.1e}, loss {loss_diff:.1e}")
    assert max(diffs.values()) < TOLERANCE, diffs
    assert loss_diff < TOLERANCE * float(fixture["forward/loss"])


@pytest.mark.parametrize("dataset", ["f30k", "coco"])
def test_evaluation_score_matches_the_released_code(fixture, wordnet, dataset) -> None:
    model = _model(fixture, wordnet, dataset)
    split = fixture_split(fixture)
    with torch.no_grad():
        sims = split_similarities(model, split, 16, torch.device("cpu"))
        padded, lengths = pad_tokens(split.tokens)
        first = model.encode_captions(padded, lengths)
        images = model.encode_images(torch.from_numpy(fixture["images"]))
        e = first.shape[1] // 2
        neighbours = completion_neighbours(images[:, :e], first[:, :e], dataset)
        completed = complete_labels(model.caption_labels(padded, lengths), neighbours)
    theirs = fixture[f"{dataset}/neighbours"]
    assert neighbours == [[n for n in row if n >= 0] for row in theirs.tolist()]
    np.testing.assert_array_equal(completed.numpy(), fixture[f"{dataset}/completed_labels"])
    assert _max_diff(first[:, :e], fixture[f"{dataset}/pass1_cap_fused"]) < TOLERANCE
    diff = float(np.abs(sims - fixture[f"{dataset}/score"]).max())
    print(f"\ncvse released {dataset} evaluation score max |diff|: {diff:.1e}")
    assert diff < TOLERANCE
