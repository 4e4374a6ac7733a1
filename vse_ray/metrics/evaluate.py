"""All retrieval metrics of one similarity matrix as a flat dict with MLflow-safe keys."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vse_ray.metrics.functional._checks import as_image_index, as_mask, as_matrix, check_same_shape
from vse_ray.metrics.functional.average_precision import average_precision
from vse_ray.metrics.functional.coherent_score import coherent_score, coherent_scores
from vse_ray.metrics.functional.map_at_r import map_at_r
from vse_ray.metrics.functional.ncs import ncs_at_ks
from vse_ray.metrics.functional.r_precision import r_precision
from vse_ray.metrics.functional.recall_at_k import ground_truth_mask, recall_at_k
from vse_ray.metrics.functional.retrieval_recall import retrieval_recall
from vse_ray.metrics.functional.semantic_recall import semantic_recall_at_ks
from vse_ray.metrics.functional.semantic_recall_by_image import semantic_recall_by_image


def evaluate_all(
    sims: Any,
    img_of_cap: Any,
    relevance: Mapping[str, Any] | None = None,
    ks: Sequence[int] = (1, 5, 10),
    cs_ks: Sequence[int] = (5, 10, 100, 1000),
    ncs_ks: Sequence[int] = (1, 5, 10, 25, 50),
    *,
    cs_source: str = "sbert",
    tau_source: str | None = None,
    ncs_source: str = "cider",
    suffixed_sources: Sequence[str] = ("scene",),
    sr_ms: Sequence[int] = (),
    eccv_positives: Mapping[str, Any] | None = None,
    chunk_size: int = 1024,
) -> dict[str, float]:
    """Every metric of the five papers for an (n_images, n_captions) similarity matrix, both directions.

    Keys (``d`` in {i2t, t2i}; no '@', so MLflow accepts them):

    - ``R_at_{k}_d`` (R^V), ``trueR_at_{k}_d``, ``medr_d``, ``meanr_d``, ``rsum`` (percent; SAM eq. 1-2);
    - ``mAP_i2t``: full-ranking mAP with the image's captions as positives (ladder paper, Table XI);
    - with ``relevance[cs_source]``: ``CS_at_{k}_d`` (ladder eq. 13) for each k of ``cs_ks`` that fits the
      gallery; with ``relevance[tau_source]``: ``tau_d``, Kendall tau over the whole gallery (BCLS Table VI);
    - with ``relevance[ncs_source]``, as fractions, in two conventions each (SAM/NCS paper; the plain
      name is the released code's, which produced the published tables, ``_eq5`` / ``_eq4`` the
      equation as printed): ``NCS_at_{k}_d`` and ``NCS_noGT_at_{k}_d`` (ground truth removed) sum the
      relevance of every retrieved item, ``NCS_eq5_at_{k}_d`` and ``NCS_eq5_noGT_at_{k}_d`` only of those
      also in the ideal top k (see :func:`ncs`); for each m of ``sr_ms``, Semantic Recall on non-GT items
      ``SR_at_{k}_m{m}_d`` with the captions of the m most related images as relevant set
      (:func:`semantic_recall_by_image`) and ``SR_eq4_at_{k}_m{m}_d`` with the m most relevant items
      (:func:`semantic_recall`);
    - for each source ``src`` of ``suffixed_sources`` present in ``relevance`` (default ``scene``, the
      synthetic data's ground-truth scene similarity): ``CS_at_{k}_d_src``, ``tau_d_src``,
      ``NCS_at_{k}_d_src``, ``NCS_noGT_at_{k}_d_src`` and their ``NCS_eq5`` forms, against that source;
    - with ``eccv_positives`` (``{"i2t": (n_images, n_captions), "t2i": (n_captions, n_images)}`` binary
      masks): ``ECCV_mAP_at_R_d``, ``ECCV_R_P_d``, ``ECCV_R_at_1_d`` (percent for R@1, fractions otherwise),
      each over the queries with at least one positive (all-False rows, the queries outside the ECCV
      Caption subset, are skipped as ``eccv_caption`` does).

    Args:
        sims: (n_images, n_captions) similarities.
        img_of_cap: (n_captions,) image index of each caption.
        relevance: source name ("sbert", "cider", "spice", ...) -> (n_images, n_captions) relevance.
        ks: R@K cut-offs. cs_ks, ncs_ks: cut-offs larger than a direction's gallery are skipped.
        cs_source, tau_source, ncs_source: which relevance feeds CS@K, tau and NCS/SR; tau (whole-gallery
            Kendall, the costliest metric) is off unless a source is named.
        suffixed_sources: sources also scored by CS@K, tau and NCS@K under keys ending in ``_<source>``.
        sr_ms: numbers m of extended relevant items for Semantic Recall.
        eccv_positives: optional binary relevance masks per direction.
        chunk_size: queries per chunk.
    """
    sims = as_matrix("sims", sims)
    index = as_image_index(img_of_cap, *sims.shape)
    relevance = {name: as_matrix(f"relevance[{name!r}]", m) for name, m in (relevance or {}).items()}
    for name, matrix in relevance.items():
        check_same_shape(f"relevance[{name!r}]", matrix, sims)
    truth = ground_truth_mask(index, sims.shape[0])
    scores = recall_at_k(sims, index, ks, chunk_size=chunk_size)
    scores["mAP_i2t"] = average_precision(sims, truth, chunk_size=chunk_size)
    for d, s, gt in (("i2t", sims, truth), ("t2i", sims.T, truth.T)):
        if cs_source in relevance:
            fitting = [k for k in cs_ks if k <= s.shape[1]]
            if fitting:
                cs = coherent_scores(s, _oriented(relevance[cs_source], d), fitting, chunk_size=chunk_size)
                scores.update({f"CS_at_{k}_{d}": value for k, value in cs.items()})
        if tau_source in relevance:
            tau = coherent_score(s, _oriented(relevance[tau_source], d), None, chunk_size=chunk_size)
            scores[f"tau_{d}"] = float(tau)  # reduced: one number
        if ncs_source in relevance:
            scores.update(
                _semantic_scores(
                    s, _oriented(relevance[ncs_source], d), gt, (ncs_ks, ks, sr_ms), d, chunk_size
                )
            )
            scores.update(
                _image_semantic_recall(sims, relevance[ncs_source], index, (ks, sr_ms), d, chunk_size)
            )
        for name in (n for n in suffixed_sources if n in relevance):
            scores.update(
                _suffixed_scores(s, _oriented(relevance[name], d), gt, (cs_ks, ncs_ks), d, name, chunk_size)
            )
        if eccv_positives is not None:
            mask = as_mask(f"eccv_positives[{d!r}]", eccv_positives[d], s.shape)
            scores[f"ECCV_mAP_at_R_{d}"] = map_at_r(s, mask, chunk_size=chunk_size)
            scores[f"ECCV_R_P_{d}"] = r_precision(s, mask, chunk_size=chunk_size)
            scores[f"ECCV_R_at_1_{d}"] = retrieval_recall(
                s, mask, (1,), skip_empty=True, chunk_size=chunk_size
            )["R_at_1"]
    return scores


def _oriented(matrix: np.ndarray, direction: str) -> np.ndarray:
    """The relevance with queries as rows: as stored for image->text, transposed for text->image."""
    return matrix if direction == "i2t" else matrix.T


def _suffixed_scores(
    sims: np.ndarray,
    relevance: np.ndarray,
    truth: np.ndarray,
    cutoffs: tuple[Sequence[int], Sequence[int]],
    direction: str,
    source: str,
    chunk_size: int,
) -> dict[str, float]:
    """CS@K, tau and NCS@K (with and without the ground truth) of one direction against ``source``."""
    cs_ks, ncs_ks = cutoffs
    fitting = [k for k in cs_ks if k <= sims.shape[1]]
    cs = coherent_scores(sims, relevance, [*fitting, sims.shape[1]], chunk_size=chunk_size)  # one sort
    scores = {f"tau_{direction}": cs[sims.shape[1]]}
    scores.update({f"CS_at_{k}_{direction}": cs[k] for k in fitting})
    scores.update(_semantic_scores(sims, relevance, truth, (ncs_ks, (), ()), direction, chunk_size))
    return {f"{key}_{source}": value for key, value in scores.items()}


def _semantic_scores(
    sims: np.ndarray,
    relevance: np.ndarray,
    truth: np.ndarray,
    cutoffs: tuple[Sequence[int], Sequence[int], Sequence[int]],
    direction: str,
    chunk_size: int,
) -> dict[str, float]:
    """NCS@K (both conventions) with and without the ground truth, and eq. 4's Semantic Recall on non-GT
    items, for one direction; rows of every matrix are queries.

    ``cutoffs`` is ``(ncs_ks, sr_ks, sr_ms)``; cut-offs the gallery cannot fill are skipped.
    """
    ncs_ks, ks, sr_ms = cutoffs
    n_left = sims.shape[1] - int(truth.sum(axis=1).max())
    scores = {}
    for label, exclude in (("", None), ("_noGT", truth)):
        fitting = [k for k in ncs_ks if k <= (sims.shape[1] if exclude is None else n_left)]
        for name, intersect in (("NCS", False), ("NCS_eq5", True)):
            if fitting:
                values = ncs_at_ks(
                    sims, relevance, fitting, exclude=exclude, intersect=intersect, chunk_size=chunk_size
                )
                scores.update({f"{name}{label}_at_{k}_{direction}": value for k, value in values.items()})
    fitting = [k for k in ks if k <= n_left]
    for m in (m for m in sr_ms if m <= n_left and fitting):
        values = semantic_recall_at_ks(sims, relevance, fitting, m, exclude=truth, chunk_size=chunk_size)
        scores.update({f"SR_eq4_at_{k}_m{m}_{direction}": value for k, value in values.items()})
    return scores


def _image_semantic_recall(
    sims: np.ndarray,
    relevance: np.ndarray,
    index: np.ndarray,
    cutoffs: tuple[Sequence[int], Sequence[int]],
    direction: str,
    chunk_size: int,
) -> dict[str, float]:
    """The released code's Semantic Recall on non-GT items for one direction, from the image x caption
    ``sims`` and ``relevance``; ``cutoffs`` is ``(sr_ks, sr_ms)``, those that do not fit are skipped."""
    ks, sr_ms = cutoffs
    n_images, n_captions = sims.shape
    n_left = n_captions - int(np.bincount(index).max()) if direction == "i2t" else n_images - 1
    fitting = [k for k in ks if k <= n_left]
    scores = {}
    for m in (m for m in sr_ms if m < n_images and fitting):
        values = semantic_recall_by_image(
            sims, relevance, index, fitting, m, direction=direction, chunk_size=chunk_size
        )
        scores.update({f"SR_at_{k}_m{m}_{direction}": value for k, value in values.items()})
    return scores
