"""CUSA's options of the clip model: the projection head and ALBEF's caption cleaning (Huang et al. AAAI
2024; lerogo/aaai24_itr_cusa 5b996f4 unire/model.py, dataset/utils.py), and its weight-decay rule."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from vse_ray.models import build_model
from vse_ray.models.caption_cleaning import albef_clean
from vse_ray.train.config import TrainConfig
from vse_ray.train.optim import NO_DECAY, parameter_groups

FIXTURE = Path(__file__).parents[2] / "fixtures" / "official" / "albef_pre_caption.json"


def test_caption_cleaning_equals_the_released_pre_caption():
    """Every case as the released function cleaned it (tests/fixtures/official/README.md), and the captions
    it refuses refused."""
    fixture = json.loads(FIXTURE.read_text())
    assert [albef_clean(raw) for raw, _ in fixture["cases"]] == [want for _, want in fixture["cases"]]
    for raw in fixture["refused"]:
        with pytest.raises(ValueError, match="leaves nothing of the caption"):
            albef_clean(raw)


def test_the_model_tokenizes_the_cleaned_captions(tiny_clip):
    plain = build_model("clip", **tiny_clip["open_clip"])
    cleaned = build_model("clip", **tiny_clip["open_clip"], caption_cleaning="albef")
    raw = ["A black-and-white dog/cat jumps!", "The <person> (left) waves."]
    got = [ids.tolist() for ids in cleaned.caption_ids([], raw)]
    assert got == [ids.tolist() for ids in plain.caption_ids([], [albef_clean(r) for r in raw])]
    assert got != [ids.tolist() for ids in plain.caption_ids([], raw)]


def test_the_projection_head_is_cusas(tiny_clip):
    """f(i) = normalise(Linear(LayerNorm(tower(i)))) for both towers, the Linear weight drawn from
    N(0, 0.02²): embeddings recomputed from the tower's output from the head's parameters, by formula."""
    torch.manual_seed(0)
    model = build_model("clip", **tiny_clip["open_clip"], projection_head=True).eval()
    images = torch.randint(0, 256, (3, 32, 32, 3), dtype=torch.uint8)
    ids = torch.from_numpy(np.stack(model.caption_ids([], ["a dog", "two cats", "a hat"])))
    lengths = torch.full((3,), ids.shape[1])
    with torch.no_grad():
        for head, got, raw in (
            (
                model.image_head,
                model.encode_images(images),
                model.towers.encode_image(model.preprocess(images)),
            ),
            (model.text_head, model.encode_captions(ids, lengths), model.towers.encode_text(ids, lengths)),
        ):
            norm, linear = head[0], head[1]
            centred = raw - raw.mean(-1, keepdim=True)
            normed = (
                centred / torch.sqrt(centred.pow(2).mean(-1, keepdim=True) + 1e-5) * norm.weight + norm.bias
            )
            want = normed @ linear.weight.T + linear.bias
            torch.testing.assert_close(got, want / want.norm(dim=-1, keepdim=True), rtol=1e-5, atol=1e-6)
            assert linear.weight.shape == (raw.shape[1], raw.shape[1])
            assert abs(linear.weight.std().item() - 0.02) < 0.01 and torch.equal(
                norm.weight, torch.ones_like(norm.weight)
            )
    with pytest.raises(ValueError, match="projection_head: must be true or false"):
        build_model("clip", **tiny_clip["open_clip"], projection_head="yes")


def test_weight_decay_exclusion_is_cusas_rule_but_for_the_scale(tiny_clip):
    """CUSA's rule (optim_factory.add_weight_decay: no decay on 1-D parameters and names ending in .bias),
    written from its description, against vse_ray's groups with weight_decay_exclude: the same parameters of
    the towers and heads; the one difference is the checkpoint's logit scale (0-D), which CUSA would decay
    and vse_ray does not, and which no loss of vse_ray's reads (it gets no gradient, so AdamW skips it)."""
    model = build_model("clip", **tiny_clip["open_clip"], projection_head=True)
    cfg = TrainConfig(model="clip", optimizer="adamw", weight_decay=1e-4, weight_decay_exclude=True)
    undecayed = {
        id(p) for g in parameter_groups(cfg, model) if g["name"].endswith(NO_DECAY) for p in g["params"]
    }

    def cusa_excludes(name: str, param: nn.Parameter) -> bool:
        return len(param.shape) == 1 or name.endswith(".bias")

    differ = [n for n, p in model.named_parameters() if cusa_excludes(n, p) != (id(p) in undecayed)]
    assert differ == ["towers.model.logit_scale"]
