"""ECCV Caption positives (Chun et al.) as binary masks, for a COCO test split whose COCO ids are known."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def _eccv_gts() -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    import eccv_caption

    data = Path(eccv_caption.__file__).parent / "data"
    i2t = json.loads((data / "eccv_image_to_caption.json").read_text())
    t2i = json.loads((data / "eccv_caption_to_image.json").read_text())
    return {int(k): v for k, v in i2t.items()}, {int(k): v for k, v in t2i.items()}


def read_coco_ids(path: str | Path) -> tuple[dict[int, int], dict[int, int]]:
    """`{"images": {image_id: coco_image_id}, "captions": {caption_id: coco_caption_id}}` from JSON."""
    doc = json.loads(Path(path).read_text())
    for key in ("images", "captions"):
        if not isinstance(doc.get(key), dict):
            raise ValueError(f"{path}: expected an object {key!r} mapping our ids to COCO ids")
    return ({int(k): int(v) for k, v in doc[key].items()} for key in ("images", "captions"))  # type: ignore[return-value]


def eccv_positives(
    coco_ids: str | Path, image_ids: np.ndarray, caption_ids: np.ndarray
) -> dict[str, np.ndarray]:
    """`{"i2t": (n_images, n_captions), "t2i": (n_captions, n_images)}` ECCV positive masks.

    Queries outside the ECCV Caption subset get all-False rows (metrics skip them).
    """
    images, captions = read_coco_ids(coco_ids)
    missing = [int(i) for i in image_ids if int(i) not in images][:3]
    if missing:
        raise ValueError(f"{coco_ids}: no COCO id for image_id(s) {missing}")
    img_col = {images[int(i)]: k for k, i in enumerate(image_ids)}
    cap_col = {captions[int(c)]: k for k, c in enumerate(caption_ids) if int(c) in captions}
    i2t_gt, t2i_gt = _eccv_gts()
    i2t = np.zeros((len(image_ids), len(caption_ids)), dtype=bool)
    t2i = np.zeros((len(caption_ids), len(image_ids)), dtype=bool)
    for coco_img, row in img_col.items():
        i2t[row, [cap_col[c] for c in i2t_gt.get(coco_img, []) if c in cap_col]] = True
    for coco_cap, row in cap_col.items():
        t2i[row, [img_col[i] for i in t2i_gt.get(coco_cap, []) if i in img_col]] = True
    return {"i2t": i2t, "t2i": t2i}
