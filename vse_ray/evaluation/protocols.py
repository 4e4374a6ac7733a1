"""Scoring protocols: which images, which captions and which reference metric produce a split's numbers.

vse_ray's own protocol is the default: every image of the split with all its captions, CS@K against the
image-mean relevance of the coherence source, NCS@K against the semantic source (CIDEr). A paper's numbers
may have been scored otherwise; each way is a named option of ``vse-ray evaluate`` that a recipe's
``paper:`` block selects (docs/recipes.md, "How each paper scored its numbers"):

- ``images``: ``full`` (the split), ``coco5k`` (its 5,000 COCO images), ``coco1k`` (the mean over five folds
  of 1,000: VSE++'s ``evalrank(fold5=True)``), ``first1k`` (its first 1,000 images, once: SAM's "MSCOCO 1K",
  the ``test`` file of ``coco_precomp``, evaluate.py and metrics/eval.py at 554fef3; the ladder code's
  validation images, thCapRank.py at b37ad78);
- ``ncs_reference``: the relevance source NCS@K and Semantic Recall read (``cider``, or ``spice``: SAM's
  tables, run_all.py:88 at 554fef3);
- ``cs_captions``: ``all``, or ``first``: CS@K of each image against its first caption only, with the
  cosine between first captions as relevance (the ladder code's ``doTau``,
  :func:`~vse_ray.metrics.functional.first_captions.first_caption_view`).

The split is the report's own field: a paper that reported on its validation images is scored on ``val``.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from vse_ray.metrics import evaluate_all, first_caption_view, image_block, mean_over_folds
from vse_ray.relevance.sources import SOURCES, scoring_source

IMAGE_SETS = ("full", "coco1k", "coco5k", "first1k")
NCS_REFERENCES = ("cider", "spice")
CS_CAPTIONS = ("all", "first")
DEFAULT_NCS = str(scoring_source("semantic"))
COHERENCE = str(scoring_source("coherence"))
_FIRST_CAPTION_KEY = re.compile(r"CS_at_\d+_(i2t|t2i)")
_IMAGES = {
    "full": "every image of the split",
    "coco5k": "the 5,000 COCO images of the split",
    "coco1k": "the mean over 5 folds of 1,000 images",
    "first1k": "the split's first 1,000 images, once",
}


@dataclass(frozen=True)
class Protocol:
    """How a split is scored (see the module docstring); the defaults are vse_ray's own protocol."""

    images: str = "full"
    ncs_reference: str = DEFAULT_NCS
    cs_captions: str = "all"

    def __post_init__(self) -> None:
        for name, option, allowed in (
            ("images", "protocol", IMAGE_SETS),
            ("ncs_reference", "ncs_reference", NCS_REFERENCES),
            ("cs_captions", "cs_captions", CS_CAPTIONS),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{option}: expected one of {allowed}, got {getattr(self, name)!r}")

    @classmethod
    def of(cls, block: Mapping[str, Any]) -> Protocol:
        """The protocol a recipe's ``paper:`` block names (``protocol`` is the image set)."""
        given = {"images": block.get("protocol", "full")}
        given.update({f.name: block[f.name] for f in fields(cls) if f.name != "images" and f.name in block})
        return cls(**given)

    @property
    def name(self) -> str:
        """The image set, then what differs from vse_ray's own protocol: ``first1k-ncs_spice``,
        ``coco5k-cs_first`` (report file names and MLflow key groups)."""
        parts = [self.images]
        if self.ncs_reference != DEFAULT_NCS:
            parts.append(f"ncs_{self.ncs_reference}")
        if self.cs_captions != "all":
            parts.append(f"cs_{self.cs_captions}")
        return "-".join(parts)

    def describe(self, split: str) -> str:
        """One sentence for the report: the split and each choice."""
        where = "the validation images" if split == "val" else f"split {split!r}"
        cs = "each image's first caption, caption-caption" if self.cs_captions == "first" else "all captions,"
        return (
            f"{where} ({split}): {_IMAGES[self.images]}; CS@K over {cs} {COHERENCE} relevance; "
            f"NCS@K against {self.ncs_reference}"
        )


def check_sources(protocol: Protocol, relevance: Collection[str], where: str) -> None:
    """ValueError (one line) when the split lacks the relevance the protocol reads beyond vse_ray's own."""
    if protocol.ncs_reference != DEFAULT_NCS and protocol.ncs_reference not in relevance:
        raise ValueError(
            f"{where}: no {protocol.ncs_reference!r} relevance for NCS@K (--ncs-reference "
            f"{protocol.ncs_reference}); compute it with `vse-ray precompute --relevance "
            f"{protocol.ncs_reference}` into a new folder (SPICE needs Java and the Stanford CoreNLP jars)"
        )


def caption_vector_column() -> str:
    """The caption column of the coherence source whose cosines the first-caption CS@K reads."""
    column = SOURCES[COHERENCE].vector_column
    if column is None:
        raise ValueError(f"relevance source {COHERENCE!r} stores no caption vectors")
    return column


def score_images(
    sims: np.ndarray,
    img_of_cap: np.ndarray,
    relevance: Mapping[str, np.ndarray],
    protocol: Protocol,
    metric_kwargs: Mapping[str, Any],
    caption_vectors: np.ndarray | None = None,
) -> dict[str, float]:
    """Every metric of :func:`~vse_ray.metrics.evaluate_all` under ``protocol``: on its image blocks (the
    mean over COCO 1K's folds), NCS@K against its reference, CS@K over first captions when it says so
    (``caption_vectors``: (n_captions, D) vectors of the coherence source, needed then).

    Raises:
        ValueError: a split too small for the image set, or first captions without vectors.
    """
    n_images = sims.shape[0]
    if protocol.images in ("coco1k", "coco5k") and n_images != 5000:
        raise ValueError(
            f"protocol {protocol.images!r} needs the 5,000-image COCO test split, got {n_images} images"
        )
    if protocol.images == "first1k" and n_images < 1000:
        raise ValueError(f"protocol 'first1k' needs at least 1,000 images, got {n_images}")
    if protocol.cs_captions == "first" and caption_vectors is None:
        raise ValueError("cs_captions 'first': the caption vectors of the coherence source are needed")
    blocks = {"coco1k": [(f * 1000, (f + 1) * 1000) for f in range(5)], "first1k": [(0, 1000)]}
    kwargs = {**metric_kwargs, "ncs_source": protocol.ncs_reference}
    index = np.asarray(img_of_cap)
    results = []
    for start, stop in blocks.get(protocol.images, [(0, n_images)]):
        s, i, r, captions = image_block(sims, index, relevance, start, stop)
        scores = evaluate_all(s, i, r or None, **kwargs)
        if protocol.cs_captions == "first" and caption_vectors is not None:
            scores = {k: v for k, v in scores.items() if not _FIRST_CAPTION_KEY.fullmatch(k)}
            scores.update(_first_caption_cs(s, i, caption_vectors[captions], kwargs))
        results.append(scores)
    return results[0] if len(results) == 1 else mean_over_folds(results)


def _first_caption_cs(
    sims: np.ndarray, img_of_cap: np.ndarray, vectors: np.ndarray, kwargs: Mapping[str, Any]
) -> dict[str, float]:
    """The CS@K keys of the images against their first captions (ladder ``doTau``)."""
    view_sims, view_index, cosine = first_caption_view(sims, img_of_cap, vectors)
    cutoffs = {k: v for k, v in kwargs.items() if k.endswith("_ks")}
    scores = evaluate_all(
        view_sims,
        view_index,
        {COHERENCE: cosine},
        cs_source=COHERENCE,
        ncs_source=None,
        suffixed_sources=(),
        chunk_size=kwargs.get("chunk_size", 1024),
        **cutoffs,
    )
    return {k: v for k, v in scores.items() if _FIRST_CAPTION_KEY.fullmatch(k)}
