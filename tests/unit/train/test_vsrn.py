"""VSRN (Li et al., ICCV 2019): forward parity with the official code, caption targets, the training term."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.parity.vsrn_names import vsrn_name
from vse_ray.data.precompute.vocab import END, START
from vse_ray.models import build_model
from vse_ray.models.caption_decoder import caption_targets
from vse_ray.models.training_output import TrainingOutput

pytestmark = pytest.mark.usefixtures("one_torch_thread")
FIXTURE = Path(__file__).parents[2] / "fixtures" / "official" / "vsrn_forward.npz"
TOL = 1e-5


def _official_model(variant: str) -> tuple[torch.nn.Module, dict[str, np.ndarray]]:
    """vse_ray's VSRN with the weights the official code was run with (see the fixtures' README)."""
    with np.load(FIXTURE) as data:
        arrays = {k: data[k] for k in data.files}
    sizes = json.loads(str(arrays["meta"]))["sizes"]
    model = build_model("vsrn", variant=variant, caption_dropout=0.0, **sizes)
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
    labels, mask = caption_targets(tokens, lengths, max_len)
    assert labels.tolist() == [[START, 7, 8, END, 0], [START, 7, 8, 9, END], [START, END, 0, 0, 0]]
    assert mask.tolist() == [[1, 1, 1, 1, 1], [1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]


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
