"""evaluate_all: MLflow-safe keys, values equal to the functional metrics, optional sources."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.metrics._inputs import retrieval_input
from vse_ray.metrics import (
    average_precision,
    coherent_score,
    evaluate_all,
    map_at_r,
    ncs,
    recall_at_k,
    semantic_recall,
    semantic_recall_by_image,
)


def test_keys_and_values_match_the_functions() -> None:
    sims, img_of_cap, relevance = retrieval_input(n_images=15, per_image=3, seed=9)
    truth = img_of_cap[None, :] == np.arange(15)[:, None]
    eccv = {"i2t": truth, "t2i": truth.T}
    scores = evaluate_all(
        sims,
        img_of_cap,
        {"sbert": relevance, "cider": relevance},
        cs_ks=(5, 20),
        ncs_ks=(5, 40),
        sr_ms=(2,),
        tau_source="sbert",
        eccv_positives=eccv,
        chunk_size=4,
    )
    assert all("@" not in key and isinstance(value, float) for key, value in scores.items())
    for key, value in recall_at_k(sims, img_of_cap).items():
        assert scores[key] == value
    assert scores["mAP_i2t"] == average_precision(sims, truth)
    assert scores["CS_at_20_i2t"] == coherent_score(sims, relevance, 20)
    assert "CS_at_20_t2i" not in scores  # 15 images: the text->image gallery cannot fill K = 20
    assert scores["tau_t2i"] == coherent_score(sims.T, relevance.T, None)
    assert scores["NCS_at_5_t2i"] == ncs(sims.T, relevance.T, 5, intersect=False)
    assert scores["NCS_eq5_at_5_t2i"] == ncs(sims.T, relevance.T, 5, intersect=True)
    assert scores["NCS_noGT_at_40_i2t"] == ncs(sims, relevance, 40, exclude=truth, intersect=False)
    assert scores["NCS_eq5_noGT_at_40_i2t"] == ncs(sims, relevance, 40, exclude=truth, intersect=True)
    assert scores["NCS_at_5_t2i"] > scores["NCS_eq5_at_5_t2i"]
    assert scores["SR_eq4_at_5_m2_t2i"] == semantic_recall(sims.T, relevance.T, 5, 2, exclude=truth.T)
    by_image = semantic_recall_by_image(sims, relevance, img_of_cap, (1, 5, 10), 2, direction="t2i")
    assert scores["SR_at_5_m2_t2i"] == by_image[5]
    assert scores["ECCV_mAP_at_R_t2i"] == map_at_r(sims.T, truth.T)
    assert scores["ECCV_R_at_1_i2t"] == scores["R_at_1_i2t"]


def test_without_relevance_only_binary_metrics() -> None:
    sims, img_of_cap, _ = retrieval_input(seed=3)
    scores = evaluate_all(sims, img_of_cap)
    assert not any(key.startswith(("CS_", "NCS_", "tau_", "SR_", "ECCV_")) for key in scores)
    assert {"rsum", "medr_i2t", "meanr_t2i", "mAP_i2t"} <= scores.keys()


def test_bad_relevance_is_named() -> None:
    sims, img_of_cap, _ = retrieval_input(seed=3)
    with pytest.raises(ValueError, match="relevance\\['cider'\\]"):
        evaluate_all(sims, img_of_cap, {"cider": np.full(sims.shape, np.nan)})


def test_scene_source_gets_its_own_suffixed_keys() -> None:
    sims, img_of_cap, relevance = retrieval_input(n_images=15, per_image=3, seed=4)
    scene = np.random.default_rng(1).random(relevance.shape)
    truth = img_of_cap[None, :] == np.arange(15)[:, None]
    scores = evaluate_all(
        sims, img_of_cap, {"sbert": relevance, "scene": scene}, cs_ks=(5, 20), ncs_ks=(5,), chunk_size=4
    )
    assert scores["CS_at_5_i2t"] == coherent_score(sims, relevance, 5)  # unsuffixed: still S-BERT
    assert scores["CS_at_5_i2t_scene"] == pytest.approx(coherent_score(sims, scene, 5))
    assert scores["CS_at_20_i2t_scene"] == pytest.approx(coherent_score(sims, scene, 20))
    assert scores["CS_at_5_t2i_scene"] == pytest.approx(coherent_score(sims.T, scene.T, 5))
    assert "CS_at_20_t2i_scene" not in scores
    assert scores["tau_i2t_scene"] == pytest.approx(coherent_score(sims, scene))
    assert scores["tau_t2i_scene"] == pytest.approx(coherent_score(sims.T, scene.T))
    assert scores["NCS_at_5_t2i_scene"] == pytest.approx(ncs(sims.T, scene.T, 5))
    assert scores["NCS_noGT_at_5_i2t_scene"] == pytest.approx(ncs(sims, scene, 5, exclude=truth))
    assert "tau_i2t" not in scores and "NCS_at_5_i2t" not in scores  # no cider, no tau_source
    assert not any(k.startswith("SR_") for k in scores)
