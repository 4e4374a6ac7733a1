"""CVSE's forward pass and concept graph against the released code's numbers (tests/fixtures/official/).

`cvse_forward.npz` holds a tiny released CVSE model in evaluation mode (batch norms with drawn running
statistics), one batch and the embeddings it computed; see the README there for how it was made.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.parity.test_step_parity import FIXTURES, cvse_name, fixture_arrays
from vse_ray.data.precompute.concepts import concept_adjacency
from vse_ray.models import build_model
from vse_ray.models.cvse_modules import normalized_adjacency

TOLERANCE = 1e-5  # float32


@pytest.fixture(scope="module")
def fixture() -> dict[str, np.ndarray]:
    return fixture_arrays(FIXTURES / "cvse_forward.npz")


def _model(arrays: dict[str, np.ndarray]) -> torch.nn.Module:
    meta = json.loads(str(arrays["meta"]))
    model = build_model("cvse", **meta["sizes"], **meta["model_params"])
    state = model.state_dict()
    for key, value in arrays.items():
        if key.startswith("init/") and (name := cvse_name(key.removeprefix("init/"))) is not None:
            assert state[name].shape == value.shape, key
            state[name] = torch.from_numpy(value)
    model.load_state_dict(state)
    return model.eval()


def test_forward_matches_the_released_code(fixture: dict[str, np.ndarray]) -> None:
    model = _model(fixture)
    images = torch.from_numpy(fixture["images"])
    tokens, lengths = torch.from_numpy(fixture["tokens"]), torch.from_numpy(fixture["lengths"])
    with torch.no_grad():
        img_levels, txt_levels = model.image_levels(images), model.caption_levels(tokens, lengths)
        img, txt = model.encode_images(images), model.encode_captions(tokens, lengths)
        sims = model.score(img, txt)
    ours = {
        "img_emb": img,
        "cap_emb": txt,
        "sims": sims,
        "img_instance": img_levels[0],
        "img_consensus": img_levels[1],
        "img_concepts": img_levels[2],
        "cap_instance": txt_levels[0],
        "cap_consensus": txt_levels[1],
        "cap_concepts": txt_levels[2],
    }
    diffs = {k: float(np.abs(v.numpy() - fixture[k]).max()) for k, v in ours.items()}
    print("\ncvse forward max |diff|: " + ", ".join(f"{k} {d:.1e}" for k, d in diffs.items()))
    assert max(diffs.values()) < TOLERANCE, diffs


def test_concept_graph_matches_the_released_reweighting(fixture: dict[str, np.ndarray]) -> None:
    """vse_ray's graph from the counts N and E equals the released gen_A_concept + gen_adj."""
    adjacency = concept_adjacency(fixture["concept_counts"], fixture["concept_cooccurrence"])
    ours = normalized_adjacency(torch.from_numpy(adjacency)).numpy()
    assert (adjacency - np.identity(len(adjacency)) > 0).any()  # the drawn counts give some edges
    np.testing.assert_allclose(ours, fixture["init/adjacency"], rtol=0, atol=1e-7)
