"""VSE∞'s initial weights: after the same torch seed, vse_ray draws the official code's weights draw for draw.

The recorded official run (`tests/fixtures/official/vse_inf_run_replay.npz`, see its README entry) seeded
torch with 0 before `VSEModel(opt)` and kept the weights it drew (`init/*`). vse_ray's model draws its initial
values in the reference's order (image side first; within each side the layers' default initialisations,
then the Xavier FC and the uniform word embedding last), so a run of seed s starts where the official run of
seed s starts: the seed means the same initial weights in both codes, and a comparison over seeds pairs them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from vse_ray.models import build_model, official_names

RECORDING = Path(__file__).parent.parent / "fixtures" / "official" / "vse_inf_run_replay.npz"
SEED = 0  # the recording's torch.manual_seed


@pytest.fixture(scope="module")
def official_init() -> dict[str, np.ndarray]:
    with np.load(RECORDING) as rec:
        return {k.removeprefix("init/"): rec[k] for k in rec.files if k.startswith("init/")}


def _seeded_model(official_init: dict[str, np.ndarray], vocab_rows: int) -> torch.nn.Module:
    features, embed = official_init["img_enc.fc.weight"].shape[::-1]
    word_dim = official_init["txt_enc.embed.weight"].shape[1]
    torch.manual_seed(SEED)
    return build_model(
        "vse_inf", vocab_size=vocab_rows, feature_dim=features, word_dim=word_dim, embed_dim=embed
    )


def test_a_seed_draws_the_official_initial_weights(official_init):
    """With the official embedding's rows (the vocabulary and `<mask>`), every initial tensor is equal."""
    model = _seeded_model(official_init, len(official_init["txt_enc.embed.weight"]))
    ours = model.state_dict()
    compared = 0
    for name, expected in official_init.items():
        key = official_names.VSE_INF_BIGRU.ours(name)
        if key is None:
            continue
        np.testing.assert_array_equal(ours[key].numpy(), expected, err_msg=name)
        compared += 1
    assert compared == len(ours)


def test_the_image_side_does_not_depend_on_the_vocabulary(official_init):
    """The image side is drawn first, so it equals the official draw whatever the vocabulary's size."""
    model = _seeded_model(official_init, len(official_init["txt_enc.embed.weight"]) - 1)
    ours = model.state_dict()
    for name, expected in official_init.items():
        key = official_names.VSE_INF_BIGRU.ours(name)
        if key is not None and name.startswith("img_enc."):
            np.testing.assert_array_equal(ours[key].numpy(), expected, err_msg=name)
