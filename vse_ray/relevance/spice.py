"""All-pairs SPICE through pycocoevalcap (needs Java and the Stanford CoreNLP 3.6.0 jars)."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from vse_ray.relevance._checks import check_reference_sets, check_texts

CORENLP_JARS = ("stanford-corenlp-3.6.0.jar", "stanford-corenlp-3.6.0-models.jar")


def spice_lib_dir() -> Path:
    """The folder pycocoevalcap's SPICE jar loads its libraries from."""
    import pycocoevalcap.spice

    return Path(pycocoevalcap.spice.__file__).resolve().parent / "lib"


def missing_spice_requirements() -> list[str]:
    """Human-readable list of what SPICE lacks on this machine (empty when it can run)."""
    missing = []
    if shutil.which("java") is None:
        missing.append("a Java runtime ('java' on PATH)")
    lib = spice_lib_dir()
    missing += [f"{lib / jar}" for jar in CORENLP_JARS if not (lib / jar).is_file()]
    return missing


def spice_matrix(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> np.ndarray:
    """SPICE F-score of every hypothesis against every reference set: ``N_ij = phi(G_i, c_j)`` (SAM eq. 3).

    Runs pycocoevalcap's ``Spice`` once on all (hypothesis, image) pairs. The Stanford CoreNLP jars are
    never downloaded here: put them in :func:`spice_lib_dir` beforehand (they are in
    ``stanford-corenlp-full-2015-12-09.zip`` from nlp.stanford.edu).

    Args:
        hypotheses: Captions, one row of the result each.
        references: ``references[i]`` = the reference captions of image i.

    Returns:
        (n_hypotheses, n_reference_sets) float64 SPICE scores (NaN where SPICE reports none).

    Raises:
        RuntimeError: If Java or a CoreNLP jar is missing, naming what is missing.
        ValueError: On a non-string caption or an empty reference set.
    """
    hyps = check_texts("hypotheses", hypotheses)
    sets = check_reference_sets(references)
    missing = missing_spice_requirements()
    if missing:
        raise RuntimeError(
            "spice_matrix needs Java and the Stanford CoreNLP 3.6.0 jars; missing: "
            + "; ".join(missing)
            + ". Copy both jars from stanford-corenlp-full-2015-12-09.zip into "
            + f"{spice_lib_dir()} (nothing is downloaded automatically)."
        )
    if not hyps or not sets:
        return np.zeros((len(hyps), len(sets)))
    from pycocoevalcap.spice.spice import Spice

    n_sets = len(sets)
    pairs = range(len(hyps) * n_sets)
    res = {pair: [hyps[pair // n_sets]] for pair in pairs}
    gts = {pair: sets[pair % n_sets] for pair in pairs}
    _, scores = Spice().compute_score(gts, res)
    return np.array([score["All"]["f"] for score in scores], dtype=np.float64).reshape(len(hyps), n_sets)
