"""All retrieval metrics of one similarity matrix as a flat dict with MLflow-safe keys."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vse_ray.metrics.functional._checks import as_image_index, as_matrix, check_same_shape
from vse_ray.metrics.functional.recall_at_k import ground_truth_mask
from vse_ray.metrics.registry import CUTOFFS, METRICS, Scoring
from vse_ray.relevance.sources import ORACLE_SOURCES, scoring_source


def evaluate_all(
    sims: Any,
    img_of_cap: Any,
    relevance: Mapping[str, Any] | None = None,
    *,
    cs_source: str | None = scoring_source("coherence"),
    tau_source: str | None = None,
    ncs_source: str | None = scoring_source("semantic"),
    suffixed_sources: Sequence[str] = ORACLE_SOURCES,
    sr_ms: Sequence[int] = (),
    eccv_positives: Mapping[str, Any] | None = None,
    chunk_size: int = 1024,
    **cutoffs: Sequence[int],
) -> dict[str, float]:
    """Every metric of :data:`~vse_ray.metrics.registry.METRICS` for an (n_images, n_captions) similarity
    matrix, both directions; a metric whose relevance (or ECCV mask) is not given is left out.

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
    - for each source ``src`` of ``suffixed_sources`` present in ``relevance`` (default the oracle sources:
      ``scene``, the synthetic data's ground-truth scene similarity): ``CS_at_{k}_d_src``, ``tau_d_src``,
      ``NCS_at_{k}_d_src``, ``NCS_noGT_at_{k}_d_src`` and their ``NCS_eq5`` forms, against that source;
    - with ``eccv_positives`` (``{"i2t": (n_images, n_captions), "t2i": (n_captions, n_images)}`` binary
      masks): ``ECCV_mAP_at_R_d``, ``ECCV_R_P_d``, ``ECCV_R_at_1_d`` (percent for R@1, fractions otherwise),
      each over the queries with at least one positive (all-False rows, the queries outside the ECCV
      Caption subset, are skipped as ``eccv_caption`` does).

    Args:
        sims: (n_images, n_captions) similarities.
        img_of_cap: (n_captions,) image index of each caption.
        relevance: source name ("sbert", "cider", "spice", ...) -> (n_images, n_captions) relevance.
        cs_source, tau_source, ncs_source: which relevance feeds CS@K, tau and NCS/SR (by default the
            sources that declare those metrics); tau (whole-gallery Kendall, the costliest metric) is off
            unless a source is named.
        suffixed_sources: sources also scored by CS@K, tau and NCS@K under keys ending in ``_<source>``.
        sr_ms: numbers m of extended relevant items for Semantic Recall.
        eccv_positives: optional binary relevance masks per direction.
        chunk_size: queries per chunk.
        cutoffs: the cut-offs by field (:data:`~vse_ray.metrics.registry.CUTOFFS`: ``eval_ks`` R@K,
            ``cs_ks`` CS@K, ``ncs_ks`` NCS@K; defaults there); cut-offs larger than a direction's
            gallery are skipped.
    """
    unknown = sorted(set(cutoffs) - set(CUTOFFS))
    if unknown:
        raise ValueError(
            f"evaluate_all: {unknown[0]}: unknown cut-off field; expected some of {list(CUTOFFS)}"
        )
    sims = as_matrix("sims", sims)
    index = as_image_index(img_of_cap, *sims.shape)
    relevance = {name: as_matrix(f"relevance[{name!r}]", m) for name, m in (relevance or {}).items()}
    for name, matrix in relevance.items():
        check_same_shape(f"relevance[{name!r}]", matrix, sims)
    scoring = Scoring(
        sims, index, ground_truth_mask(index, sims.shape[0]), {**CUTOFFS, **cutoffs}, sr_ms, chunk_size
    )
    sources = {"cs_source": cs_source, "tau_source": tau_source, "ncs_source": ncs_source}

    def needed(need: str | None) -> list[tuple[str, Any]]:
        """``(key suffix, what the metric reads)`` for each time a metric with this need is scored."""
        if need is None:
            return [("", None)]
        if need == "eccv_positives":
            return [] if eccv_positives is None else [("", eccv_positives)]
        if need == "suffixed_sources":
            return [(f"_{name}", relevance[name]) for name in suffixed_sources if name in relevance]
        source = sources[need]
        return [("", relevance[source])] if source in relevance else []

    scores: dict[str, float] = {}
    for metric in (m for m in METRICS if not m.directional):
        for suffix, what in needed(metric.needs):
            scores.update({f"{k}{suffix}": v for k, v in metric.score(scoring, "", what).items()})
    for direction in ("i2t", "t2i"):
        for metric in (m for m in METRICS if m.directional):
            for suffix, what in needed(metric.needs):
                scores.update({f"{k}{suffix}": v for k, v in metric.score(scoring, direction, what).items()})
    return scores
