"""The metric declarations: every key evaluate_all writes is declared, with a scale; the headline keys and
the table columns are keys it writes; the cut-off fields are the config's."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.metrics._inputs import retrieval_input
from vse_ray.metrics import evaluate_all
from vse_ray.metrics.registry import (
    BY_DIRECTION,
    CUTOFFS,
    DIRECTIONS,
    HEADLINE,
    SCALES,
    STUDY_KEYS,
    TABLE,
    scale_of,
    stem,
)
from vse_ray.train.config import TrainConfig


def _every_key() -> dict[str, float]:
    sims, img_of_cap, relevance = retrieval_input(n_images=201, per_image=5, seed=2)  # galleries fit CS@1000
    truth = img_of_cap[None, :] == np.arange(201)[:, None]
    sources = {"sbert": relevance, "cider": relevance, "scene": relevance[::-1]}
    return evaluate_all(
        sims,
        img_of_cap,
        sources,
        ncs_ks=(5, 10),
        sr_ms=(2,),
        eccv_positives={"i2t": truth, "t2i": truth.T},
    )


def test_every_key_has_a_declared_stem_and_the_declared_lists_are_keys() -> None:
    scores = _every_key()
    assert {stem(key) for key in scores} == set(SCALES)
    assert set(HEADLINE) <= scores.keys()
    assert STUDY_KEYS[: len(HEADLINE)] == HEADLINE and set(STUDY_KEYS) <= scores.keys()
    assert {"R_at_10_t2i", "NCS_at_10_i2t", "tau_i2t_scene", "NCS_at_10_t2i_scene"} <= set(STUDY_KEYS)
    assert {column.key for column in TABLE} <= scores.keys()
    assert all(any(f"{key}_{d}" in scores for d in DIRECTIONS) for key in BY_DIRECTION)


@pytest.mark.parametrize(
    ("key", "scale"),
    [
        ("rsum", "percent"),
        ("test_coco1k/trueR_at_5_t2i", "percent"),
        ("medr_i2t", "rank"),
        ("ECCV_R_at_1_t2i", "percent"),
        ("ECCV_R_P_i2t", "fraction"),
        ("ECCV_mAP_at_R_i2t", "fraction"),
        ("test_scene/CS_at_100_i2t", "fraction"),
        ("SR_eq4_at_5_m2_t2i", "fraction"),
        ("val/best_rsum", "fraction"),  # no metric declares it
    ],
)
def test_scale_of_a_key(key: str, scale: str) -> None:
    assert scale_of(key) == scale


def test_cutoff_fields_are_the_configs_and_unknown_ones_are_refused() -> None:
    assert {field: getattr(TrainConfig(), field) for field in CUTOFFS} == CUTOFFS
    sims, img_of_cap, _ = retrieval_input(seed=1)
    with pytest.raises(ValueError, match="ks: unknown cut-off field"):
        evaluate_all(sims, img_of_cap, ks=(1,))
