"""One model contract: every registered model, built tiny, gives the (B, B) similarities of a batch in its
feature layout, trains through them (gradients reach its parameters), and in evaluation mode its forward is
``score`` of the two sides encoded once (`vse_ray.models.base`)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.nn.utils.rnn import pad_sequence

from tests.support.gsmn_graphs import chain_graphs
from tests.support.tiny_store import COLOURS, SHAPES, TEMPLATES
from vse_ray.losses import make_loss
from vse_ray.models import build_model
from vse_ray.models.names import MODEL_NAMES
from vse_ray.models.training_output import split_output
from vse_ray.train.region_drop import draw_region_keep

B, R, D, VOCAB = 4, 5, 12, 30  # pairs, regions per image, feature width, vocabulary size
SIZES = {"vocab_size": VOCAB, "feature_dim": D, "word_dim": 8, "embed_dim": 16}
TINY = {  # each model's own sizes, small
    "sgraf": {"n_regions": R, "sim_dim": 8},
    "cvse": {
        "n_regions": R,
        "n_concepts": 6,
        "concept_dim": 8,
        "rank_loss": make_loss("vsepp").from_similarity,
    },
    "vsrn": {"caption_hidden": 8, "caption_word_dim": 8},
    "gsmn": {"num_block": 4, "hid_dim": 16},  # D - 4 region features and 4 box columns
}
VARIANTS = [(name, {}) for name in MODEL_NAMES] + [
    ("vsepp", {"cnn": "tiny", "feature_dim": 0}),  # pixels, the CNN fine-tuned end to end
    ("vsepp", {"regions": R}),  # regions projected concatenated (LSEH's released VSE++)
    ("vse_inf", {"text_encoder": "bert"}),  # the tiny local BERT of tests/support
    ("scan", {"direction": "i2t", "aggregation": "mean"}),
    ("sgraf", {"module": "saf"}),
    ("vsrn", {"variant": "coco"}),
    ("gsmn", {"sparse": True}),  # dependency edges from a graph file of the batch's captions
    ("clip", {"backend": "hf"}),  # the tiny CLIPModel (the plain "clip" entry: the tiny open_clip towers)
    ("clip", {"backend": "siglip"}),
]


def _images(layout: str) -> torch.Tensor:
    """A batch of B images in `layout`."""
    if layout == "pooled":
        return torch.randn(B, D)
    if layout == "regions":
        return torch.randn(B, R, D)
    return torch.randint(0, 256, (B, 16, 16, 3), dtype=torch.uint8)


def _texts() -> list[str]:
    return [TEMPLATES[i].format(c=COLOURS[i], s=SHAPES[i % 2]) for i in range(B)]


def _captions(model: torch.nn.Module) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, L) ids the model reads (`caption_ids` of stored tokens and their texts) and (B,) lengths."""
    texts = _texts()
    rng = np.random.default_rng(0)
    tokens = [rng.integers(4, VOCAB, len(t.split())) for t in texts]
    ids = [torch.as_tensor(i) for i in model.caption_ids(tokens, texts)]
    return pad_sequence(ids, batch_first=True), torch.tensor([len(i) for i in ids])


@pytest.mark.parametrize(("name", "params"), VARIANTS, ids=[f"{n}-{p}" for n, p in VARIANTS])
def test_every_model_gives_batch_similarities_and_trains(name, params, request):
    if params.get("text_encoder") == "bert":
        params = {**params, "bert_path": str(request.getfixturevalue("tiny_bert_dir"))}
    if name == "clip":  # the tiny checkpoints of tests/support, as model_params
        params = request.getfixturevalue("tiny_clip")[params.get("backend", "open_clip")]
    if params.get("sparse"):
        graphs = chain_graphs(_texts(), request.getfixturevalue("tmp_path") / "graphs.json")
        params = {**params, "graph_path": str(graphs)}
    torch.manual_seed(0)
    model = build_model(name, **{**SIZES, **TINY.get(name, {}), **params})
    images = _images(model.feature_layout)
    tokens, lengths = _captions(model)
    # as the training step: the data path's kept regions where the model drops regions
    options: dict[str, torch.Tensor] = {}
    if model.region_drop > 0:
        keep = draw_region_keep(B, R, model.region_drop, np.random.default_rng(0))
        options["region_keep"] = torch.from_numpy(keep)
    out = split_output(model(images, tokens, lengths, **options))
    assert out.sims.shape == (B, B)
    out.total(make_loss("vsepp").from_similarity(out.sims)).backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)
    assert sum(float(g.abs().sum()) for g in grads) > 0

    model.eval()
    with torch.no_grad():
        sims = split_output(model(images, tokens, lengths)).sims
        encoded = model.score(model.encode_images(images), model.encode_captions(tokens, lengths), lengths)
    torch.testing.assert_close(sims, encoded)
