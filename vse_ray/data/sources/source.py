"""In-memory description of a dataset before precompute: per split, the images and their captions."""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from vse_ray.data.sources.image_io import FileImages, SyntheticImages

SPLIT_NAMES = ("train", "val", "test")
# The longest caption kept (characters, so at most as many tokens); COCO's and Flickr30K's longest are a few
# hundred. Longer captions are cut with a warning (docs/data.md).
MAX_CAPTION_CHARS = 1000
# C0 and C1 control characters but tab and line breaks: a caption holding one (NUL, ESC) is refused.
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
T = TypeVar("T")


@dataclass(frozen=True)
class SplitSource:
    """The images of one split in precompute order and ``captions_per_image`` captions of each.

    Attributes:
        image_ids: (n,) int64 unique ids.
        refs: (n,) where each image comes from: a path under the image root, a synthetic index, or a row
            of a precomp feature file.
        captions: ``captions[k]`` = the captions of image k.
        caption_ids: (n, captions_per_image) int64 unique ids.
        scenes: (n, D) float32 scene descriptors
            (:func:`~vse_ray.data.synthetic.scene.scene_descriptor`) where the
            dataset knows its scenes (synthetic), else None.
    """

    image_ids: np.ndarray
    refs: np.ndarray
    captions: tuple[tuple[str, ...], ...]
    caption_ids: np.ndarray
    scenes: np.ndarray | None = None


@dataclass(frozen=True)
class PrecompFeatures:
    """A precomp ``{split}_ims.npy``: image k is row ``k * stride`` (stride 5 when stored per caption)."""

    path: str
    stride: int


@dataclass(frozen=True)
class Source:
    """A dataset to precompute: its splits, and where pixels (``images``) or given features come from."""

    splits: dict[str, SplitSource]
    images: FileImages | SyntheticImages | None = None
    features: dict[str, PrecompFeatures] | None = None


def checked_captions(
    captions: Sequence[Sequence[str]], per_image: int, where: Sequence[str]
) -> tuple[tuple[str, ...], ...]:
    """The first ``per_image`` captions of each image, each cut to :data:`MAX_CAPTION_CHARS`.

    A longer caption is cut at the last word boundary before the limit, with one warning that counts them
    and names the first (a 1 MB caption would otherwise be stored, tokenised and padded whole).

    Args:
        captions: Captions of each image.
        per_image: Captions each image needs.
        where: ``where[k]`` names image k (file and row) in messages.

    Raises:
        ValueError: Naming the file and row of an image with too few captions, of an empty caption
            (`is_blank`) or of one holding a control character (NUL, ESC ...; tab and line breaks are kept
            as spaces are).
    """
    kept, long = [], []
    for k, caps in enumerate(captions):
        if len(caps) < per_image:
            raise ValueError(f"{where[k]}: has {len(caps)} captions, needs at least {per_image}")
        for j, text in enumerate(caps[:per_image]):
            if not isinstance(text, str) or is_blank(text):
                raise ValueError(f"{where[k]}: caption {j} is empty (nothing but blanks)")
            control = CONTROL.search(text)
            if control:
                raise ValueError(
                    f"{where[k]}: caption {j} holds the control character U+{ord(control[0]):04X} at "
                    f"character {control.start()}: captions are text; remove it"
                )
            if len(text) > MAX_CAPTION_CHARS:
                long.append(f"{where[k]}: caption {j} ({len(text):,} characters)")
        kept.append(tuple(_cut(text, MAX_CAPTION_CHARS) for text in caps[:per_image]))
    if long:
        logging.getLogger(__name__).warning(
            "%d caption(s) longer than %d characters cut to that length (docs/data.md), e.g. %s",
            len(long),
            MAX_CAPTION_CHARS,
            long[0],
        )
    return tuple(kept)


def is_blank(text: str) -> bool:
    """Whether `text` holds nothing to read: only whitespace and Unicode format characters (category Cf:
    zero-width space U+200B, zero-width joiners, word joiner U+2060, byte-order mark U+FEFF, soft hyphen),
    which print as nothing and tokenise to nothing."""
    return all(char.isspace() or unicodedata.category(char) == "Cf" for char in text)


def _cut(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, at the last word boundary when there is one."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    if not text[limit].isspace() and len(head.split()) > 1:
        head = head.rsplit(maxsplit=1)[0]
    return head.rstrip()


def select_splits(available: dict[str, T], wanted: Sequence[str], origin: str) -> dict[str, T]:
    """Keep the ``wanted`` splits; ValueError naming a split the data does not have."""
    for split in wanted:
        if split not in available:
            raise ValueError(f"split {split!r} does not exist in {origin}; it has {sorted(available)}")
    return {split: available[split] for split in wanted}
