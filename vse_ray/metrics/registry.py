"""The metrics of an evaluation, each declared once: its keys and their scale, the relevance it needs, its
cut-off field, how it scores, and which of its keys are headlines and table columns.

As torchmetrics pairs ``functional/`` with metric classes, each :class:`Metric` here wraps the functions of
:mod:`vse_ray.metrics.functional`. :func:`~vse_ray.metrics.evaluate_all` loops over :data:`METRICS`; the
MLflow headline keys (:data:`HEADLINE`), the study's tables (:data:`TABLE`), the sweep's per-direction
columns (:data:`BY_DIRECTION`) and the number style of every key (:func:`scale_of`) read them. The module
imports no metric code (tracking and reporting read it), so each scorer imports its functions when called.

To add a metric: its function in ``functional/``, its :class:`Metric` in :data:`METRICS`, and its test.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from vse_ray.relevance.sources import ORACLE_SOURCES

Scale = Literal["percent", "rank", "fraction"]
DIRECTIONS = ("i2t", "t2i")
ORACLE = "{oracle}"  # in a declared key: each oracle relevance source (`relevance.sources.ORACLE_SOURCES`)
# The cut-off fields (TrainConfig fields and `evaluate_all` arguments) and their defaults.
CUTOFFS: dict[str, tuple[int, ...]] = {
    "eval_ks": (1, 5, 10),
    "cs_ks": (5, 10, 100, 1000),
    "ncs_ks": (1, 5, 10, 25, 50),
}


@dataclass(frozen=True)
class Scoring:
    """What the metrics of one evaluation read.

    Attributes:
        sims: (n_images, n_captions) similarities.
        index: (n_captions,) image row of each caption.
        truth: (n_images, n_captions) ground-truth mask.
        cutoffs: Cut-offs by field (:data:`CUTOFFS`).
        sr_ms: Numbers m of extended relevant items for Semantic Recall.
        chunk_size: Queries per chunk.
    """

    sims: np.ndarray
    index: np.ndarray
    truth: np.ndarray
    cutoffs: Mapping[str, Sequence[int]]
    sr_ms: Sequence[int]
    chunk_size: int

    def oriented(self, direction: str) -> tuple[np.ndarray, np.ndarray]:
        """Similarities and ground truth with the queries of ``direction`` as rows."""
        return (self.sims, self.truth) if direction == "i2t" else (self.sims.T, self.truth.T)

    def fitting(self, field: str, gallery: int) -> list[int]:
        """The cut-offs of ``field`` that a gallery of ``gallery`` items can fill."""
        return [k for k in self.cutoffs[field] if k <= gallery]


# A scorer: (what it reads, direction or "" for a whole-matrix metric, what it needs or None) → its keys.
Scorer = Callable[[Scoring, str, Any], dict[str, float]]


@dataclass(frozen=True)
class Column:
    """A metric key in the study's tables: its title in the Markdown table and in the console ("": not
    shown there). ``{oracle}`` in either stands for each oracle source."""

    key: str
    title: str
    console: str = ""


@dataclass(frozen=True)
class Metric:
    """One metric (or a family scored together) of :func:`~vse_ray.metrics.evaluate_all`.

    Attributes:
        name: What it is.
        keys: The stems of its keys (the key without cut-off, ``m``, direction and source suffix) and
            their scale: "percent" and "rank" print with one decimal, "fraction" with three.
        score: Its scorer.
        needs: The `evaluate_all` argument that gives it what it needs: a relevance source
            ("cs_source", "tau_source", "ncs_source"), every oracle source ("suffixed_sources", its keys
            then end in ``_<source>``), "eccv_positives", or None (the ground truth only).
        cutoffs: The cut-off fields it reads (:data:`CUTOFFS`).
        directional: Scored once per direction (else once over the whole matrix).
        headline: Its keys logged as MLflow metrics, in order.
        study: Its keys a study's test runs log besides the headline, so that the study's summary gives
            their paired differences too.
        table: Its columns in the study's Markdown table (and console table).
        by_direction: Its keys, without direction, in the sweep's one-row-per-direction table.
    """

    name: str
    keys: Mapping[str, Scale]
    score: Scorer
    needs: str | None = None
    cutoffs: tuple[str, ...] = ()
    directional: bool = True
    headline: tuple[str, ...] = ()
    study: tuple[str, ...] = ()
    table: tuple[Column, ...] = ()
    by_direction: tuple[str, ...] = ()


def _recall(s: Scoring, direction: str, need: Any) -> dict[str, float]:
    from vse_ray.metrics.functional.recall_at_k import recall_at_k

    return recall_at_k(s.sims, s.index, s.cutoffs["eval_ks"], chunk_size=s.chunk_size)


def _average_precision(s: Scoring, direction: str, need: Any) -> dict[str, float]:
    from vse_ray.metrics.functional.average_precision import average_precision

    return {"mAP_i2t": average_precision(s.sims, s.truth, chunk_size=s.chunk_size)}


def _coherent(s: Scoring, direction: str, relevance: np.ndarray) -> dict[str, float]:
    from vse_ray.metrics.functional.coherent_score import coherent_scores

    sims, _ = s.oriented(direction)
    fitting = s.fitting("cs_ks", sims.shape[1])
    if not fitting:
        return {}
    cs = coherent_scores(sims, _oriented(relevance, direction), fitting, chunk_size=s.chunk_size)
    return {f"CS_at_{k}_{direction}": value for k, value in cs.items()}


def _tau(s: Scoring, direction: str, relevance: np.ndarray) -> dict[str, float]:
    from vse_ray.metrics.functional.coherent_score import coherent_score

    sims, _ = s.oriented(direction)
    rel = _oriented(relevance, direction)
    return {f"tau_{direction}": float(coherent_score(sims, rel, None, chunk_size=s.chunk_size))}


def _ncs(s: Scoring, direction: str, relevance: np.ndarray) -> dict[str, float]:
    """NCS@K in both conventions (the released code's, eq. 5's), with and without the ground truth."""
    from vse_ray.metrics.functional.ncs import ncs_at_ks

    sims, truth = s.oriented(direction)
    rel = _oriented(relevance, direction)
    n_left = sims.shape[1] - int(truth.sum(axis=1).max())
    scores = {}
    for label, exclude in (("", None), ("_noGT", truth)):
        fitting = s.fitting("ncs_ks", sims.shape[1] if exclude is None else n_left)
        for name, intersect in (("NCS", False), ("NCS_eq5", True)):
            if fitting:
                values = ncs_at_ks(
                    sims, rel, fitting, exclude=exclude, intersect=intersect, chunk_size=s.chunk_size
                )
                scores.update({f"{name}{label}_at_{k}_{direction}": value for k, value in values.items()})
    return scores


def _semantic_recall(s: Scoring, direction: str, relevance: np.ndarray) -> dict[str, float]:
    """Eq. 4's Semantic Recall on non-GT items, the m most relevant items as the relevant set."""
    from vse_ray.metrics.functional.semantic_recall import semantic_recall_at_ks

    sims, truth = s.oriented(direction)
    n_left = sims.shape[1] - int(truth.sum(axis=1).max())
    fitting = s.fitting("eval_ks", n_left)
    scores = {}
    for m in (m for m in s.sr_ms if m <= n_left and fitting):
        values = semantic_recall_at_ks(
            sims, _oriented(relevance, direction), fitting, m, exclude=truth, chunk_size=s.chunk_size
        )
        scores.update({f"SR_eq4_at_{k}_m{m}_{direction}": value for k, value in values.items()})
    return scores


def _semantic_recall_by_image(s: Scoring, direction: str, relevance: np.ndarray) -> dict[str, float]:
    """The released code's Semantic Recall on non-GT items: the captions of the m most related images."""
    from vse_ray.metrics.functional.semantic_recall_by_image import semantic_recall_by_image

    n_images, n_captions = s.sims.shape
    n_left = n_captions - int(np.bincount(s.index).max()) if direction == "i2t" else n_images - 1
    fitting = s.fitting("eval_ks", n_left)
    scores = {}
    for m in (m for m in s.sr_ms if m < n_images and fitting):
        values = semantic_recall_by_image(
            s.sims, relevance, s.index, fitting, m, direction=direction, chunk_size=s.chunk_size
        )
        scores.update({f"SR_at_{k}_m{m}_{direction}": value for k, value in values.items()})
    return scores


def _against_oracle(s: Scoring, direction: str, relevance: np.ndarray) -> dict[str, float]:
    """CS@K and tau (one sort) and NCS@K against an oracle source (keys suffixed by `evaluate_all`)."""
    from vse_ray.metrics.functional.coherent_score import coherent_scores

    sims, _ = s.oriented(direction)
    fitting = s.fitting("cs_ks", sims.shape[1])
    n = sims.shape[1]
    cs = coherent_scores(sims, _oriented(relevance, direction), [*fitting, n], chunk_size=s.chunk_size)
    scores = {f"tau_{direction}": cs[n]}
    scores.update({f"CS_at_{k}_{direction}": cs[k] for k in fitting})
    scores.update(_ncs(s, direction, relevance))
    return scores


def _eccv(s: Scoring, direction: str, positives: Mapping[str, Any]) -> dict[str, float]:
    from vse_ray.metrics.functional._checks import as_mask
    from vse_ray.metrics.functional.map_at_r import map_at_r
    from vse_ray.metrics.functional.r_precision import r_precision
    from vse_ray.metrics.functional.retrieval_recall import retrieval_recall

    sims, _ = s.oriented(direction)
    mask = as_mask(f"eccv_positives[{direction!r}]", positives[direction], sims.shape)
    recall = retrieval_recall(sims, mask, (1,), skip_empty=True, chunk_size=s.chunk_size)
    return {
        f"ECCV_mAP_at_R_{direction}": map_at_r(sims, mask, chunk_size=s.chunk_size),
        f"ECCV_R_P_{direction}": r_precision(sims, mask, chunk_size=s.chunk_size),
        f"ECCV_R_at_1_{direction}": recall["R_at_1"],
    }


def _oriented(matrix: np.ndarray, direction: str) -> np.ndarray:
    """The relevance with queries as rows: as stored for image->text, transposed for text->image."""
    return matrix if direction == "i2t" else matrix.T


_NCS_KEYS: dict[str, Scale] = {name: "fraction" for name in ("NCS", "NCS_noGT", "NCS_eq5", "NCS_eq5_noGT")}

METRICS: tuple[Metric, ...] = (
    Metric(
        "R@K (R^V and true recall), median and mean rank, rsum (percent; SAM eq. 1-2)",
        {"R": "percent", "trueR": "percent", "rsum": "percent", "medr": "rank", "meanr": "rank"},
        _recall,
        cutoffs=("eval_ks",),
        directional=False,
        headline=("rsum", "R_at_1_i2t", "R_at_1_t2i"),
        study=("R_at_5_i2t", "R_at_10_i2t", "R_at_5_t2i", "R_at_10_t2i"),
        table=(
            Column("rsum", "rsum", "rsum"),
            Column("R_at_1_i2t", "R@1 i2t", "R@1 i2t"),
            Column("R_at_1_t2i", "R@1 t2i", "R@1 t2i"),
        ),
        by_direction=("R_at_1", "R_at_5", "R_at_10"),
    ),
    Metric(
        "full-ranking mAP, the image's captions as positives (ladder paper, Table XI)",
        {"mAP": "fraction"},
        _average_precision,
        directional=False,
    ),
    Metric(
        "CS@K, Kendall tau-b over the model's top K (ladder eq. 13)",
        {"CS": "fraction"},
        _coherent,
        needs="cs_source",
        cutoffs=("cs_ks",),
        headline=("CS_at_100_i2t", "CS_at_1000_i2t", "CS_at_100_t2i"),
        table=(
            Column("CS_at_100_i2t", "CS@100 i2t", "CS@100"),
            Column("CS_at_100_t2i", "CS@100 t2i"),
            Column("CS_at_1000_i2t", "CS@1000 i2t", "CS@1000"),
        ),
        by_direction=("CS_at_100", "CS_at_1000"),
    ),
    Metric(
        "Kendall tau over the whole gallery (BCLS Table VI)", {"tau": "fraction"}, _tau, needs="tau_source"
    ),
    Metric(
        "NCS@K with and without the ground truth, the released code's and eq. 5's (SAM/NCS)",
        _NCS_KEYS,
        _ncs,
        needs="ncs_source",
        cutoffs=("ncs_ks",),
        study=("NCS_at_10_i2t", "NCS_at_10_t2i"),
        by_direction=("NCS_at_10",),
    ),
    Metric(
        "Semantic Recall on non-GT items, the m most relevant items (SAM eq. 4)",
        {"SR_eq4": "fraction"},
        _semantic_recall,
        needs="ncs_source",
        cutoffs=("eval_ks",),
    ),
    Metric(
        "Semantic Recall on non-GT items, the captions of the m most related images (released code)",
        {"SR": "fraction"},
        _semantic_recall_by_image,
        needs="ncs_source",
        cutoffs=("eval_ks",),
    ),
    Metric(
        "CS@K, tau and NCS@K against an oracle source (keys ending in `_<source>`)",
        {"CS": "fraction", "tau": "fraction", **_NCS_KEYS},
        _against_oracle,
        needs="suffixed_sources",
        cutoffs=("cs_ks", "ncs_ks"),
        headline=(f"CS_at_100_i2t_{ORACLE}", f"CS_at_1000_i2t_{ORACLE}"),
        study=(
            f"CS_at_100_t2i_{ORACLE}",
            f"tau_i2t_{ORACLE}",
            f"tau_t2i_{ORACLE}",
            f"NCS_at_10_i2t_{ORACLE}",
            f"NCS_at_10_t2i_{ORACLE}",
        ),
        table=(
            Column(f"CS_at_100_i2t_{ORACLE}", f"CS@100 i2t {ORACLE}", f"CS@100 {ORACLE}"),
            Column(f"CS_at_1000_i2t_{ORACLE}", f"CS@1000 i2t {ORACLE}", f"CS@1000 {ORACLE}"),
        ),
    ),
    Metric(
        "ECCV Caption mAP@R, R-Precision (fractions) and R@1 (percent)",
        {"ECCV_mAP": "fraction", "ECCV_R_P": "fraction", "ECCV_R": "percent"},
        _eccv,
        needs="eccv_positives",
    ),
)


def _expand(text: str) -> list[str]:
    """``text`` once per oracle source when it holds ``{oracle}``."""
    return [text.replace(ORACLE, source) for source in ORACLE_SOURCES] if ORACLE in text else [text]


def _expand_column(column: Column) -> list[Column]:
    return [
        Column(*(t.replace(ORACLE, source) for t in (column.key, column.title, column.console)))
        for source in (ORACLE_SOURCES if ORACLE in column.key else ("",))
    ]


# The evaluation keys logged as MLflow metrics: recall, and CS@K against S-BERT and against the scene.
HEADLINE: tuple[str, ...] = tuple(key for m in METRICS for k in m.headline for key in _expand(k))
# The evaluation keys a study's test runs log as MLflow metrics and its summary tables: the headline, then
# R@5 and R@10, NCS@10, and CS@100 (text to image), tau and NCS@10 against the scene.
STUDY_KEYS: tuple[str, ...] = HEADLINE + tuple(key for m in METRICS for k in m.study for key in _expand(k))
# The study's Markdown table columns; the console table shows those with a console title.
TABLE: tuple[Column, ...] = tuple(c for m in METRICS for column in m.table for c in _expand_column(column))
# The sweep's table, one row per direction: these keys with the direction appended.
BY_DIRECTION: tuple[str, ...] = tuple(key for m in METRICS for key in m.by_direction)
SCALES: dict[str, Scale] = {stem: scale for m in METRICS for stem, scale in m.keys.items()}
_DETAIL = re.compile(r"(_(i2t|t2i)(_.*)?|_at_(\d+|R)(_m\d+)?)$")  # what follows a key's stem


def stem(key: str) -> str:
    """A key's stem: its name (after the MLflow group) less cut-off, m, direction and source suffix
    (``test_scene/CS_at_100_i2t`` → ``CS``, ``SR_eq4_at_5_m3_t2i`` → ``SR_eq4``, ``medr_i2t`` → ``medr``)."""
    name = key.rpartition("/")[2]
    while (shorter := _DETAIL.sub("", name)) != name:
        name = shorter
    return name


def scale_of(key: str) -> Scale:
    """The scale of a metric key: its stem's declared scale; "fraction" for a key no metric declares."""
    return SCALES.get(stem(key), "fraction")
