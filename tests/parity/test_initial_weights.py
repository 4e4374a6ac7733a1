"""Initial weights: after the same torch seed, each model draws its official code's start, tensor for tensor.

Each `*_start.npz` (tests/fixtures/official/README.md) holds the state dicts the official code built after
`torch.manual_seed(0)`, under its own names (``img_enc.``, ``txt_enc.``, ... as its checkpoints store them).
vse_ray's model, built after the same seed with the same sizes, must hold the same values in every tensor
that has an official counterpart; an official tensor without one is a layer the official forward never reads
(listed in `vse_ray.models.official_names`), and a vse_ray tensor without one is data, not a drawn weight.
VSE∞'s start is pinned by `test_vse_inf_init.py` against its recorded run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from tests.parity.vsrn_names import vsrn_name
from vse_ray.models import build_model, official_names

FIXTURES = Path(__file__).parent.parent / "fixtures" / "official"
SEED = 0  # the fixtures' torch.manual_seed
_SMALL = dict(vocab_size=20, feature_dim=12, word_dim=10, embed_dim=16)
# fixture: (vse_ray model, official name -> vse_ray key (None: not read), constructor keywords,
#           vse_ray keys that are data rather than drawn weights)
CASES: dict[str, tuple[str, Callable[[str], str | None], dict[str, Any], tuple[str, ...]]] = {
    "vsepp": ("vsepp", official_names.VSEPP.ours, _SMALL, ()),
    "scan": ("scan", official_names.SCAN.ours, _SMALL, ()),
    "sgraf_sgr": ("sgraf", official_names.SGRAF.ours, {**_SMALL, "sim_dim": 8, "module": "sgr"}, ()),
    "sgraf_saf": ("sgraf", official_names.SGRAF.ours, {**_SMALL, "sim_dim": 8, "module": "saf"}, ()),
    "gsmn": (
        "gsmn",
        official_names.GSMN.ours,
        {**_SMALL, "feature_dim": 16, "num_block": 4, "hid_dim": 16},  # 12 features + the box
        (),
    ),
    "vsrn": (
        "vsrn",
        vsrn_name,
        {**_SMALL, "word_dim": 8, "caption_hidden": 10, "caption_word_dim": 6, "max_len": 7},
        (),
    ),
    "cvse": (
        "cvse",
        official_names.CVSE.ours,
        {**_SMALL, "vocab_size": 31, "word_dim": 8, "n_concepts": 8, "concept_dim": 10},
        ("adjacency", "concept_inputs", "token_concepts"),
    ),
}
# Official tensors with no vse_ray counterpart, per fixture: layers built but never read, aliases of a
# layer stored twice (CVSE's ``embedding_<k>.0``), and CVSE's graphs (read apart, as data).
UNREAD = {"cvse": 40}


@pytest.mark.parametrize("fixture", list(CASES))
def test_a_seed_draws_the_official_initial_weights(fixture):
    model_name, ours_of, kwargs, data = CASES[fixture]
    with np.load(FIXTURES / f"{fixture}_start.npz") as f:
        official = {name: f[name] for name in f.files}
    torch.manual_seed(SEED)
    ours = build_model(model_name, **kwargs).state_dict()
    compared, unread = set(), 0
    for name, expected in official.items():
        key = ours_of(name)
        if key is None:
            unread += 1
            continue
        value = ours[key].numpy()
        # VSRN's 1×1 convolutions (out, in, 1) are vse_ray's linear layers (out, in)
        np.testing.assert_array_equal(value.reshape(expected.shape), expected, err_msg=name)
        compared.add(key)
    assert unread == UNREAD.get(fixture, 0)
    assert sorted(set(ours) - compared) == sorted(data)
