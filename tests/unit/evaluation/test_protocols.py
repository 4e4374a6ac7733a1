"""The scoring protocols against loops written from the official code that scored each paper's numbers."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau

from tests.unit.metrics.test_ncs import _ncs_reference
from vse_ray.evaluation.evaluate import PaperNumbers, resolve_protocol
from vse_ray.evaluation.protocols import Protocol, check_sources, score_images

RNG = np.random.default_rng(7)


def _split(n_images: int, per_image: int, dim: int = 8):
    """Random scores, each image's captions in consecutive columns, relevance and caption vectors."""
    n_captions = n_images * per_image
    sims = RNG.normal(size=(n_images, n_captions)).astype(np.float32)
    img_of_cap = np.repeat(np.arange(n_images), per_image)
    relevance = {
        "sbert": RNG.uniform(size=(n_images, n_captions)).astype(np.float32),
        "cider": RNG.uniform(size=(n_images, n_captions)).astype(np.float32),
        "spice": RNG.uniform(size=(n_images, n_captions)).astype(np.float32),
    }
    return sims, img_of_cap, relevance, RNG.normal(size=(n_captions, dim))


def _do_tau(scores: np.ndarray, capsts: np.ndarray, k: int) -> tuple[float, float]:
    """cdluminate/ladderloss b37ad78 ladderloss.py doTau (lines 1262-1299), as a loop: the top K of each row
    by score, Kendall's tau between their scores and the query caption's relevance to them; mean of rows."""
    n = scores.shape[0]
    i2t, t2i = np.zeros(n), np.zeros(n)
    for i in range(n):
        idxs = np.argsort(scores[i])[::-1][:k]
        i2t[i] = kendalltau(scores[i][idxs], capsts[i, idxs])[0]
        idxs = np.argsort(scores.T[i])[::-1][:k]
        t2i[i] = kendalltau(scores.T[i][idxs], capsts[i, idxs])[0]
    return float(i2t.mean()), float(t2i.mean())


@pytest.mark.parametrize(("n_images", "ks"), [(40, (10, 40)), (50, (5, 50))])
def test_the_ladder_cs_at_k_is_do_tau_over_first_captions(n_images, ks):
    """doTau keeps every fifth row of the feature dump (each image with its first caption: scores N x N) and
    the S-BERT cosine of the first captions (embeddings L2-normalised); CS@K on every K of the row (Flickr30K
    and COCO 1K: 100 and 1000 of 1,000; COCO 5K: 500 and 5000 of 5,000; here scaled down)."""
    sims, img_of_cap, relevance, vectors = _split(n_images, 5)
    scores = score_images(sims, img_of_cap, relevance, Protocol(cs_captions="first"), {"cs_ks": ks}, vectors)
    first = vectors[::5] / np.linalg.norm(vectors[::5], axis=1, keepdims=True)
    for k in ks:
        i2t, t2i = _do_tau(sims[:, ::5], first @ first.T, k)
        assert scores[f"CS_at_{k}_i2t"] == pytest.approx(i2t, abs=1e-6)
        assert scores[f"CS_at_{k}_t2i"] == pytest.approx(t2i, abs=1e-6)
    own = score_images(sims, img_of_cap, relevance, Protocol(), {"cs_ks": ks})
    assert own["CS_at_10_t2i" if 10 in ks else "CS_at_5_t2i"] != pytest.approx(
        scores["CS_at_10_t2i" if 10 in ks else "CS_at_5_t2i"]
    )
    assert own["R_at_1_i2t"] == scores["R_at_1_i2t"]  # R@K keeps all five captions (doRecall, getRecallDup5)


def test_first_captions_need_caption_vectors():
    sims, img_of_cap, relevance, _ = _split(10, 2)
    with pytest.raises(ValueError, match="caption vectors"):
        score_images(sims, img_of_cap, relevance, Protocol(cs_captions="first"), {})


def test_ncs_against_spice_reads_the_spice_matrix():
    """SAM computes its N@K with SPICE (semantic_adaptive_margin 554fef3 run_all.py:88, metrics/eval.py):
    NCS@K with every retrieved item's relevance summed (the released numerator), ground truth kept."""
    sims, img_of_cap, relevance, _ = _split(30, 5)
    spice = score_images(sims, img_of_cap, relevance, Protocol(ncs_reference="spice"), {"ncs_ks": (1, 5)})
    keep = np.zeros_like(sims, dtype=bool)
    for k in (1, 5):
        expected = _ncs_reference(sims, relevance["spice"], k, keep, intersect=False)
        assert spice[f"NCS_at_{k}_i2t"] == pytest.approx(expected, abs=1e-6)
        expected = _ncs_reference(sims.T, relevance["spice"].T, k, keep.T, intersect=False)
        assert spice[f"NCS_at_{k}_t2i"] == pytest.approx(expected, abs=1e-6)
    cider = score_images(sims, img_of_cap, relevance, Protocol(), {"ncs_ks": (1, 5)})
    assert cider["NCS_at_5_i2t"] == pytest.approx(
        _ncs_reference(sims, relevance["cider"], 5, keep, intersect=False), abs=1e-6
    )


def test_spice_missing_is_one_line():
    with pytest.raises(ValueError, match=r"no 'spice' relevance .*precompute --relevance spice"):
        check_sources(Protocol(ncs_reference="spice"), {"cider": None}, "data: split 'test'")


def _recall_at_1_i2t(sims: np.ndarray, img_of_cap: np.ndarray) -> float:
    """fartashf/vsepp evaluation.i2t (SAM's copy too) as a loop: a hit when an image's best caption is its
    own."""
    hits = [img_of_cap[np.argmax(row)] == i for i, row in enumerate(sims)]
    return 100.0 * float(np.mean(hits))


def test_first1k_scores_the_first_1000_images_once():
    """SAM's "MSCOCO 1K": evaluate.py --split test (the 1,000 images of coco_precomp's test files, the first
    fold of the 5K test images) and metrics/eval.py's ``metric[:, :1000]`` of the 5K relevance; the ladder
    code's COCO 1K: its first 1,000 validation images. One block, not a mean over five."""
    sims, img_of_cap, relevance, _ = _split(1100, 1)
    cider = {"cider": relevance["cider"]}
    cutoffs = {"eval_ks": (1,), "cs_ks": (), "ncs_ks": (1,)}
    first = score_images(sims, img_of_cap, cider, Protocol(images="first1k"), cutoffs)
    block = sims[:1000, :1000]
    assert first["R_at_1_i2t"] == pytest.approx(_recall_at_1_i2t(block, np.arange(1000)))
    keep = np.zeros((1000, 1000), dtype=bool)
    expected = _ncs_reference(block, relevance["cider"][:1000, :1000], 1, keep, False)
    assert first["NCS_at_1_i2t"] == pytest.approx(expected, abs=1e-6)
    whole = score_images(sims, img_of_cap, cider, Protocol(), cutoffs)
    assert whole["R_at_1_i2t"] == pytest.approx(_recall_at_1_i2t(sims, img_of_cap))
    with pytest.raises(ValueError, match="at least 1,000"):
        score_images(sims[:999, :999], img_of_cap[:999], {}, Protocol(images="first1k"), {})


def test_a_recipe_selects_its_protocol_and_split_and_options_override():
    """The ladder rows report on the validation images that chose the checkpoint (thCapRank.py 399-401,
    652-654; Makefile 199-200, 259): split val, shown as such in the report's sentence."""
    paper = PaperNumbers("r", Protocol(images="first1k", cs_captions="first"), "val", {"R_at_1_i2t": 40.0})
    protocol, split = resolve_protocol({}, None, paper, as_paper=True)
    assert (protocol, split) == (paper.protocol, "val") and paper.matches(protocol, split)
    assert protocol.name == "first1k-cs_first"
    assert protocol.describe(split).startswith("the validation images (val): the split's first 1,000 images")
    assert resolve_protocol({}, None, paper, as_paper=False) == (Protocol(), "test")
    overridden, _ = resolve_protocol({"cs_captions": "all"}, None, paper, as_paper=True)
    assert not paper.matches(overridden, "val")
    assert paper.beside({"R_at_1_i2t": 42.5})["numbers"]["R_at_1_i2t"]["difference"] == pytest.approx(2.5)
    with pytest.raises(ValueError, match="follows no recipe"):
        resolve_protocol({}, None, None, as_paper=True)
    with pytest.raises(ValueError, match="protocol: expected one of"):
        Protocol(images="coco10k")
