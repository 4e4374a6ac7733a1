"""VSRN (Li et al., ICCV 2019): forward parity with the official code, caption targets, the training term."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.parity.vsrn_names import vsrn_name
from tests.support import tiny_store
from vse_ray.data.precompute.official_vocab import SPECIALS
from vse_ray.data.precompute.vocab import encode
from vse_ray.models import build_model
from vse_ray.models.caption_decoder import caption_targets
from vse_ray.models.training_output import TrainingOutput
from vse_ray.special_tokens import END, START
from vse_ray.train.training_data import TrainingData

pytestmark = pytest.mark.usefixtures("one_torch_thread")
FIXTURES = Path(__file__).parents[2] / "fixtures" / "official"
FIXTURE = FIXTURES / "vsrn_forward.npz"
TOL = 1e-5


def _official_model(variant: str, end_id: int = END) -> tuple[torch.nn.Module, dict[str, np.ndarray]]:
    """vse_ray's VSRN with the weights the official code was run with (see the fixtures' README)."""
    with np.load(FIXTURE) as data:
        arrays = {k: data[k] for k in data.files}
    sizes = json.loads(str(arrays["meta"]))["sizes"]
    model = build_model("vsrn", variant=variant, caption_dropout=0.0, end_id=end_id, **sizes)
    state = model.state_dict()
    prefix = f"{variant}/weights/"
    weights = {vsrn_name(k.removeprefix(prefix)): v for k, v in arrays.items() if k.startswith(prefix)}
    assert set(weights) == {k for k in state if not k.endswith("num_batches_tracked")}
    model.load_state_dict(
        {**state, **{k: torch.from_numpy(v).reshape(state[k].shape) for k, v in weights.items()}}
    )
    return model.eval(), {k.removeprefix(f"{variant}/"): v for k, v in arrays.items()}


@pytest.mark.parametrize("variant", ["f30k", "coco"])
def test_forward_matches_the_official_code(variant: str) -> None:
    model, fx = _official_model(variant)
    with torch.no_grad():
        img, regions = model.image_encoder(torch.from_numpy(fx["images"]))
        txt = model.encode_captions(torch.from_numpy(fx["tokens"]), torch.from_numpy(fx["lengths"]))
        sims = model.score(img, txt)
        caption = model.captioner.loss(
            regions, torch.from_numpy(fx["tokens"][:4]), torch.from_numpy(fx["lengths"][:4])
        )
    diffs = {
        "img_emb": np.abs(img.numpy() - fx["img_emb"]).max(),
        "cap_emb": np.abs(txt.numpy() - fx["cap_emb"]).max(),
        "sims": np.abs(sims.numpy() - fx["sims"]).max(),
        "regions": np.abs(regions.numpy() - fx["regions"]).max(),
        "caption_loss": abs(caption.item() - float(fx["caption_loss"])) / abs(float(fx["caption_loss"])),
    }
    print(f"\nvsrn {variant} forward max |diff|: " + ", ".join(f"{k} {v:.1e}" for k, v in diffs.items()))
    assert max(diffs.values()) < TOL, diffs


def test_caption_targets_follow_the_reference_loader() -> None:
    """Each caption's targets: its first max_len tokens (a cut caption ends on <end>), zero padding; the mask
    covers the kept tokens and one padding position."""
    max_len = 5
    rows = [[START, 7, 8, END], [START, 7, 8, 9, 10, 11, END], [START, END]]
    lengths = torch.tensor([len(r) for r in rows])
    tokens = torch.zeros(3, 7, dtype=torch.int64)
    for i, r in enumerate(rows):
        tokens[i, : len(r)] = torch.tensor(r)
    labels, mask = caption_targets(tokens, lengths, max_len, END)
    assert labels.tolist() == [[START, 7, 8, END, 0], [START, 7, 8, 9, END], [START, END, 0, 0, 0]]
    assert mask.tolist() == [[1, 1, 1, 1, 1], [1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]


def test_caption_targets_of_a_released_vocabulary_match_the_official_code() -> None:
    """Captions encoded with a released vocabulary (<pad> 0, <start> 1, <end> 2, <unk> 3): the official
    loader's labels and masks, and the official caption loss on the official reasoned regions."""
    with np.load(FIXTURES / "vsrn_released_vocab.npz") as data:
        fx = {k: data[k] for k in data.files}
    vocab = json.loads(str(fx["vocab_json"]))
    assert [vocab[t] for t in SPECIALS] == [0, 1, 2, 3]
    for caption, length, row in zip(fx["captions"], fx["lengths"], fx["tokens"], strict=True):
        assert encode(str(caption), vocab).tolist() == row[:length].tolist()
    model, forward = _official_model("f30k", end_id=vocab["<end>"])
    tokens, lengths = torch.from_numpy(fx["tokens"]), torch.from_numpy(fx["lengths"])
    labels, mask = model.captioner.targets(tokens, lengths)
    steps = labels.shape[1]
    assert labels.tolist() == fx["labels"][:, :steps].tolist() and not fx["masks"][:, steps + 1 :].any()
    assert mask.tolist() == fx["masks"][:, :steps].tolist()
    with torch.no_grad():
        loss = model.captioner.loss(torch.from_numpy(forward["regions"]), tokens, lengths).item()
    diff = abs(loss - float(fx["caption_loss"]))
    print(f"\nvsrn released-vocabulary caption loss {loss:.6f}, max |diff| {diff:.1e}")
    assert diff < TOL * abs(loss)


def test_training_gives_vsrn_the_end_id_of_the_data(tmp_path, monkeypatch) -> None:
    """Data precomputed with a released vocabulary keeps its ids: the VSRN that training builds from it ends
    a cut caption's target with that vocabulary's <end> (2), not vse_ray's own (3, a released <unk>)."""
    words = [w for w in tiny_store._vocab() if w not in SPECIALS]
    released = {w: i for i, w in enumerate((*SPECIALS, *words))}
    monkeypatch.setattr(tiny_store, "_vocab", lambda: released)
    data_dir = tiny_store.write_tiny_store(tmp_path / "released", regions=3)
    params = {"max_len": 5, "caption_hidden": 4, "caption_word_dim": 4}
    cfg = tiny_store.tiny_config(data_dir, tmp_path / "out", model="vsrn", model_params=params)
    data = TrainingData.load(cfg, None)
    assert data.model_args["end_id"] == released["<end>"] == 2
    model = build_model("vsrn", **data.model_args)
    stored = data.train_captions.column("tokens").to_pylist()
    longest = max(map(len, stored))
    tokens = torch.tensor([t for t in stored if len(t) == longest][:3])
    assert longest > params["max_len"] and released["<end>"] not in tokens[:, :-1]
    labels, _ = model.captioner.targets(tokens, torch.full((len(tokens),), longest))
    assert labels[:, 0].tolist() == [released["<start>"]] * len(tokens)
    assert labels[:, params["max_len"] - 1].tolist() == [released["<end>"]] * len(tokens)

    (data_dir / "vocab.json").write_text(json.dumps({k: v for k, v in released.items() if k != "<end>"}))
    with pytest.raises(ValueError, match=r"vocab.json: no '<end>', which model 'vsrn' needs"):
        TrainingData.load(cfg, None)


def test_caption_term_comes_with_the_similarities_in_training_only() -> None:
    model = build_model(
        "vsrn", vocab_size=12, feature_dim=6, word_dim=4, embed_dim=8, caption_hidden=5, max_len=6
    )
    images = torch.randn(3, 4, 6)
    tokens = torch.tensor([[START, 5, 6, END], [START, 7, END, 0], [START, END, 0, 0]])
    lengths = torch.tensor([4, 3, 2])
    output = model(images, tokens, lengths)
    assert isinstance(output, TrainingOutput) and output.sims.shape == (3, 3)
    assert list(output.local_losses) == ["caption"] and output.local_losses["caption"].item() > 0
    run_loss = torch.tensor(2.0)
    assert output.objective(run_loss, 2) == 2 * run_loss + output.local_losses["caption"]  # local: unscaled
    model.eval()
    assert isinstance(model(images, tokens, lengths), torch.Tensor)
    without = build_model("vsrn", vocab_size=12, feature_dim=6, word_dim=4, embed_dim=8, caption_weight=0.0)
    assert without.captioner is None and isinstance(without(images, tokens, lengths), torch.Tensor)


def test_pooled_features_are_refused() -> None:
    model = build_model("vsrn", vocab_size=12, feature_dim=6, word_dim=4, embed_dim=8)
    with pytest.raises(ValueError, match="region features"):
        model.encode_images(torch.randn(3, 6))
