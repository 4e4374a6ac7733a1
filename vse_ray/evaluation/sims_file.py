"""`vse-ray evaluate --sims`: every metric of a similarity matrix that another program computed.

The file is an (n_images, n_captions) ``.npy`` array whose rows follow the split's stored image order and
whose columns follow its captions sorted by ``caption_id`` (the order of :class:`SplitData`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from vse_ray.data.store.split_data import load_split
from vse_ray.evaluation.eccv import eccv_positives
from vse_ray.evaluation.evaluate import (
    EvaluationReport,
    PaperNumbers,
    check_protocol,
    check_split,
    score_split,
    scored,
    write_report,
)
from vse_ray.evaluation.protocols import Protocol
from vse_ray.folder_names import DEFAULT_OUTPUT_DIR

SIMS_ORDER = "rows: the split's images in stored order; columns: its captions sorted by caption_id"


def load_sims(path: str | Path, n_images: int, n_captions: int) -> np.ndarray:
    """The float (n_images, n_captions) matrix of a ``.npy`` file; ValueError naming the file, the expected
    shape and what was found (a transposed matrix is named as such)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"sims {path}: no such file")
    try:
        sims = np.load(path, allow_pickle=False)
    except Exception as err:
        raise ValueError(f"sims {path}: not a .npy array (truncated or another format?): {err}") from err
    expected = (n_images, n_captions)
    if sims.shape != expected:
        hint = " (captions x images: transpose it)" if sims.shape == expected[::-1] else ""
        raise ValueError(
            f"sims {path}: expected (n_images, n_captions) = {expected}, found shape {sims.shape}{hint}"
        )
    if not np.issubdtype(sims.dtype, np.number) or np.issubdtype(sims.dtype, np.complexfloating):
        raise ValueError(f"sims {path}: expected a real-valued array, found dtype {sims.dtype}")
    if not np.isfinite(sims).all():
        row, col = np.argwhere(~np.isfinite(sims))[0]
        raise ValueError(f"sims {path}: expected finite values, found {sims[row, col]} at ({row}, {col})")
    return sims.astype(np.float32, copy=False)


def evaluate_sims(
    sims_path: str,
    data_dir: str,
    split: str = "test",
    protocol: Protocol = Protocol(),
    output_dir: str = DEFAULT_OUTPUT_DIR,
    coco_ids: str | None = None,
    paper: PaperNumbers | None = None,
) -> EvaluationReport:
    """Score the matrix of `sims_path` (order: :data:`SIMS_ORDER`) against `split` of `data_dir` with
    every metric (:func:`~vse_ray.metrics.evaluate_all` with its default cut-offs) and write a JSON report
    to ``<output_dir>/reports/``.

    Args:
        sims_path: ``.npy`` file of (n_images, n_captions) similarities.
        data_dir: Precompute folder whose split gives the ground truth and the relevance.
        split: Split of `data_dir` the matrix scores.
        protocol: How to score it (as ``evaluate_run``).
        output_dir: Where the report goes.
        coco_ids: JSON mapping image/caption ids to COCO ids: adds the ECCV Caption metrics.
        paper: A recipe's paper numbers, put beside the matrix's when scored by the same protocol.
    """
    check_protocol(protocol, coco_ids)
    check_split(protocol, data_dir, split)
    data = load_split(data_dir, split, raw=False)
    sims = load_sims(sims_path, len(data.images.image_ids), len(data.caption_ids))
    kwargs: dict[str, Any] = {}
    if coco_ids:
        kwargs["eccv_positives"] = eccv_positives(coco_ids, data.images.image_ids, data.caption_ids)
    metrics = score_split(sims, data, protocol, kwargs, data_dir, split)
    report = scored(None, str(Path(sims_path).resolve()), split, protocol, metrics, paper)
    return write_report(report, output_dir, f"{Path(sims_path).stem}_{split}_{protocol.name}.json")
