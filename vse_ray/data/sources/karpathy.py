"""Karpathy-split JSON (``dataset_coco.json``, ``dataset_flickr30k.json``, ``dataset_flickr8k.json``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from vse_ray.data.sources.source import SPLIT_NAMES, SplitSource, checked_captions, select_splits

SPLIT_OF = {
    "train": "train",
    "restval": "train",
    "val": "val",
    "test": "test",
}  # restval → train (VSE++ "rV")


def read_karpathy(
    json_path: str, splits: Sequence[str], captions_per_image: int = 5, restval: bool = True
) -> dict[str, SplitSource]:
    """Read the images and first ``captions_per_image`` raw captions of each split.

    ``image_id`` is the JSON ``imgid`` and ``caption_id`` the ``sentid``; an image's ref is
    ``filepath/filename`` (COCO) or ``filename`` (Flickr), relative to the image root.

    Args:
        json_path: The Karpathy JSON file.
        splits: Splits to return (``train`` includes ``restval`` unless `restval` is False).
        captions_per_image: Captions kept per image.
        restval: Put COCO's ``restval`` images in ``train`` (113,287 train images, VSE++ "rV"); False
            leaves them out (82,783).

    Raises:
        ValueError: Naming the file and ``images[row]`` of an unknown split name, a missing field or one
            of the wrong type, an image with too few captions or an empty caption; the ids of an ``imgid`` or
            ``sentid`` used twice; or a requested split the file does not have.
    """
    path = Path(json_path)
    if not path.is_file():
        raise ValueError(f"karpathy_json: file {json_path} does not exist")
    try:
        document = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{json_path}: expected a UTF-8 JSON file ({err})") from err
    if not isinstance(document, dict):
        raise ValueError(
            f"{json_path}: the top level is a JSON {type(document).__name__}, expected an object with an "
            "'images' list (Karpathy split format)"
        )
    images = document.get("images")
    if not isinstance(images, list) or not images:
        raise ValueError(f"{json_path}: expected a non-empty 'images' list")
    rows: dict[str, list[int]] = {split: [] for split in SPLIT_NAMES}
    for row, image in enumerate(images):
        _check_image(json_path, row, image)
        if restval or image["split"] != "restval":
            rows[SPLIT_OF[image["split"]]].append(row)
    _check_unique(json_path, "imgid", [(row, image["imgid"]) for row, image in enumerate(images)])
    _check_unique(
        json_path,
        "sentid",
        [(row, s["sentid"]) for row, image in enumerate(images) for s in image["sentences"]],
    )
    available = {
        split: _split_source(json_path, images, index, captions_per_image)
        for split, index in rows.items()
        if index
    }
    return select_splits(available, splits, json_path)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_image(json_path: str, row: int, image: object) -> None:
    """ValueError naming ``images[row]`` and the field that is missing or of the wrong type."""
    where = f"{json_path}: images[{row}]"
    if not isinstance(image, dict):
        raise ValueError(f"{where} is a {type(image).__name__}, expected an object")
    for key in ("split", "filename", "imgid", "sentences"):
        if key not in image:
            raise ValueError(f"{where} has no {key!r} field")
    for key in ("split", "filename", "filepath"):
        if key in image and not isinstance(image[key], str):
            raise ValueError(f"{where}.{key} is {image[key]!r}, expected a string")
    if image["split"] not in SPLIT_OF:
        raise ValueError(f"{where} has unknown split {image['split']!r}, expected {list(SPLIT_OF)}")
    if not _is_int(image["imgid"]):
        raise ValueError(f"{where}.imgid is {image['imgid']!r}, expected an integer")
    if not isinstance(image["sentences"], list):
        raise ValueError(f"{where}.sentences is a {type(image['sentences']).__name__}, expected a list")
    for k, sentence in enumerate(image["sentences"]):
        if not isinstance(sentence, dict):
            raise ValueError(f"{where}.sentences[{k}] is a {type(sentence).__name__}, expected an object")
        if not _is_int(sentence.get("sentid")):
            raise ValueError(
                f"{where}.sentences[{k}].sentid is {sentence.get('sentid')!r}, expected an integer"
            )
        if not isinstance(sentence.get("raw", ""), str):
            raise ValueError(f"{where}.sentences[{k}].raw is {sentence['raw']!r}, expected a string")


def _check_unique(json_path: str, key: str, rows_ids: list[tuple[int, int]]) -> None:
    """ValueError naming the ids that occur more than once and the rows of ``images`` that hold them."""
    seen: dict[int, list[int]] = {}
    for row, value in rows_ids:
        seen.setdefault(value, []).append(row)
    twice = {value: rows for value, rows in seen.items() if len(rows) > 1}
    if twice:
        examples = "; ".join(f"{key} {value} in images{rows[:3]}" for value, rows in list(twice.items())[:3])
        raise ValueError(
            f"{json_path}: {len(twice)} {key}(s) occur more than once (each would map two captions or images "
            f"to one row), e.g. {examples}"
        )


def _split_source(json_path: str, images: list[dict], rows: list[int], per_image: int) -> SplitSource:
    where = [f"{json_path}: images[{row}] ({images[row]['filename']})" for row in rows]
    sentences = [images[row]["sentences"] for row in rows]
    captions = checked_captions([[s.get("raw", "") for s in sents] for sents in sentences], per_image, where)
    refs = [str(Path(images[row].get("filepath", "")) / images[row]["filename"]) for row in rows]
    return SplitSource(
        image_ids=np.array([images[row]["imgid"] for row in rows], dtype=np.int64),
        refs=np.array(refs, dtype=object),
        captions=captions,
        caption_ids=np.array(
            [[s["sentid"] for s in sents[:per_image]] for sents in sentences], dtype=np.int64
        ),
    )
