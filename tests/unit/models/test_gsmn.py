"""GSMN's inputs: governors packed into the caption ids, the graph file's errors, and what the released
graphs make of boxes and edges."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from torch.nn.utils.rnn import pad_sequence

from vse_ray.models import build_model
from vse_ray.models.gsmn import governors

SIZES = {"vocab_size": 20, "feature_dim": 10, "word_dim": 8, "embed_dim": 16, "num_block": 4, "hid_dim": 16}
TEXTS = ["a dog runs", "two cats sit on a mat"]


@pytest.fixture()
def graph_file(tmp_path):
    path = tmp_path / "graphs.json"
    edges = {TEXTS[0]: [[0, 2], [2, 1]], TEXTS[1]: [[0, 3], [2, 1], [3, 2], [3, 4], [6, 5], [4, 6], [9, 1]]}
    path.write_text(json.dumps(edges))
    return path


def _tokens(rng: np.random.Generator) -> list[np.ndarray]:
    return [rng.integers(4, 20, len(t.split()) + 2) for t in TEXTS]  # <start> words <end>


def test_governors_skip_the_root_pair_and_edges_beyond_the_caption():
    assert governors([[0, 2], [2, 1], [7, 3], [2, 3], [1, 3]], 5).tolist() == [-1, 2, -1, 2, -1]


def test_sparse_ids_carry_each_words_governor(graph_file):
    model = build_model("gsmn", **SIZES, sparse=True, graph_path=str(graph_file))
    tokens = _tokens(np.random.default_rng(0))
    ids = model.caption_ids(tokens, TEXTS)
    assert [i % 20 for i in ids[0]] == list(tokens[0])
    assert (ids[1] // 20 - 1).tolist() == [-1, 2, 3, -1, 3, 6, 4, -1]  # pair (9, 1) is beyond the caption
    padded = pad_sequence([torch.as_tensor(i) for i in ids], batch_first=True)
    words = model.encode_captions(padded, torch.tensor([len(i) for i in ids]))
    assert words[1, :, -1].tolist() == [-1, 2, 3, -1, 3, 6, 4, -1] and words[0, 5:, -1].tolist() == [-1] * 3


def test_graph_file_errors_name_the_file_and_caption(graph_file, tmp_path):
    with pytest.raises(FileNotFoundError, match="graph_path: not given; the sparse GSMN"):
        build_model("gsmn", **SIZES, sparse=True)
    with pytest.raises(FileNotFoundError, match="no such file: .*missing.json"):
        build_model("gsmn", **SIZES, sparse=True, graph_path=str(tmp_path / "missing.json"))
    model = build_model("gsmn", **SIZES, sparse=True, graph_path=str(graph_file))
    with pytest.raises(ValueError, match="graphs.json: no dependency edges for caption 'a cat'"):
        model.caption_ids(_tokens(np.random.default_rng(0))[:1], ["a cat"])
    with pytest.raises(ValueError, match="caption augmentation: the sparse GSMN"):
        model.caption_ids(_tokens(np.random.default_rng(0)), TEXTS, augment=lambda ids: ids)
    with pytest.raises(ValueError, match="feature_dim must count the region features and 4 box columns"):
        build_model("gsmn", **{**SIZES, "feature_dim": 4})


def test_released_graphs_boxes_matter_edges_only_round(graph_file):
    """As released, the textual kernels sum to one over a word's neighbours, so dense and sparse score
    alike up to rounding; the visual kernels are normalised per region pair, so the boxes change scores."""
    torch.manual_seed(0)
    dense = build_model("gsmn", **SIZES).eval()
    sparse = build_model("gsmn", **SIZES, sparse=True, graph_path=str(graph_file)).eval()
    sparse.load_state_dict(dense.state_dict())
    images = torch.cat([torch.randn(3, 5, 6), torch.rand(3, 5, 2) * 0.5, 0.5 + torch.rand(3, 5, 2) * 0.5], -1)
    other_boxes = torch.cat([images[..., :6], images.flip(1)[..., 6:]], -1)  # each region another's box
    tokens = _tokens(np.random.default_rng(1))
    scores = []
    with torch.no_grad():
        for model, regions in ((dense, images), (sparse, images), (dense, other_boxes)):
            ids = [torch.as_tensor(i) for i in model.caption_ids(tokens, TEXTS)]
            lengths = torch.tensor([len(i) for i in ids])
            words = model.encode_captions(pad_sequence(ids, batch_first=True), lengths)
            scores.append(model.score(model.encode_images(regions), words, lengths))
    assert (scores[0] - scores[1]).abs().max() < 1e-6
    assert (scores[0] - scores[2]).abs().max() > 1e-4
