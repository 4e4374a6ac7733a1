"""GSMN's scores and first training gradients against the released code's (tests/fixtures/official/).

`gsmn_forward.npz` holds a tiny released GSMN model's weights under their released names, a batch (region
features, normalised boxes, token ids, dependency edges per caption), the dense and sparse score matrices
it computed, and one training step's loss and gradients; the README there says how it was made.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.nn.utils.rnn import pad_sequence

from tests.parity.test_step_parity import FIXTURES, fixture_arrays
from vse_ray.losses import make_loss
from vse_ray.models import build_model
from vse_ray.models.official_names import GSMN

TOLERANCE = 1e-5  # float32


@pytest.fixture(scope="module")
def fixture() -> dict[str, np.ndarray]:
    return fixture_arrays(FIXTURES / "gsmn_forward.npz")


def _model(arrays: dict[str, np.ndarray], sparse: bool, graph_path: str) -> torch.nn.Module:
    """vse_ray's GSMN with the released weights, built from the released options."""
    opt = json.loads(str(arrays["meta"]))["opt"]
    model = build_model(
        "gsmn",
        vocab_size=opt["vocab_size"],
        feature_dim=opt["img_dim"] + 4,
        word_dim=opt["word_dim"],
        embed_dim=opt["embed_size"],
        sparse=sparse,
        graph_path=graph_path,
        lambda_softmax=opt["lambda_softmax"],
        num_block=opt["num_block"],
        hid_dim=opt["hid_dim"],
    )
    released = {k.removeprefix("init/"): v for k, v in arrays.items() if k.startswith("init/")}
    state = {GSMN.ours(k): torch.from_numpy(v) for k, v in released.items()}
    assert set(state) == set(model.state_dict()), set(state) ^ set(model.state_dict())
    model.load_state_dict(state)
    return model


def _inputs(arrays: dict[str, np.ndarray], prefix: str, tmp: Path) -> tuple[torch.Tensor, list, list, str]:
    """(images with box columns, token lists, texts, graph file) of one stored batch."""
    images = np.concatenate([arrays[f"{prefix}images"], arrays[f"{prefix}boxes"]], axis=-1)
    lengths = arrays[f"{prefix}lengths"]
    tokens = [row[:n] for row, n in zip(arrays[f"{prefix}tokens"], lengths, strict=True)]
    texts = [f"caption {k}" for k in range(len(tokens))]
    graph = tmp / f"{prefix.strip('/') or 'forward'}_graph.json"
    graph.write_text(json.dumps(dict(zip(texts, json.loads(str(arrays[f"{prefix}depends"])), strict=True))))
    return torch.from_numpy(images), tokens, texts, str(graph)


def _captions(model: torch.nn.Module, tokens: list, texts: list) -> tuple[torch.Tensor, torch.Tensor]:
    ids = [torch.as_tensor(i) for i in model.caption_ids(tokens, texts)]
    return pad_sequence(ids, batch_first=True), torch.tensor([len(i) for i in ids])


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_scores_match_the_released_code(fixture, sparse, tmp_path) -> None:
    images, tokens, texts, graph = _inputs(fixture, "", tmp_path)
    model = _model(fixture, sparse, graph).eval()
    ids, lengths = _captions(model, tokens, texts)
    with torch.no_grad():
        sims = model.score(model.encode_images(images), model.encode_captions(ids, lengths), lengths)
    expected = fixture["sims_sparse" if sparse else "sims_dense"]
    diff = float(np.abs(sims.numpy() - expected).max())
    print(f"\ngsmn {'sparse' if sparse else 'dense'} scores max |diff| {diff:.1e}")
    assert diff < TOLERANCE


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_training_loss_and_gradients_match_the_released_step(fixture, sparse, tmp_path) -> None:
    """The released step's max-of-hinges loss (margin 0.2, summed) and every gradient before clipping."""
    images, tokens, texts, graph = _inputs(fixture, "step/", tmp_path)
    model = _model(fixture, sparse, graph).train()
    ids, lengths = _captions(model, tokens, texts)
    loss = make_loss("vsepp", margin=0.2).from_similarity(model(images, ids, lengths))
    loss.backward()
    loss = loss.detach()
    tag = f"step/{'sparse' if sparse else 'dense'}/"
    assert abs(float(loss) - float(fixture[f"{tag}loss"])) < TOLERANCE * float(fixture[f"{tag}loss"])
    grads = {
        GSMN.ours(k.removeprefix(f"{tag}grad/")): v for k, v in fixture.items() if k.startswith(f"{tag}grad/")
    }
    params = dict(model.named_parameters())
    diffs = {name: float(np.abs(params[name].grad.numpy() - g).max()) for name, g in grads.items()}
    worst = max(diffs, key=diffs.get)
    print(f"\ngsmn {tag} loss {float(loss):.6f}; worst gradient |diff| {diffs[worst]:.1e} ({worst})")
    assert diffs[worst] < TOLERANCE, diffs
