"""ECCV Caption positives: masks built from the package's annotation files for user-supplied COCO ids."""

from __future__ import annotations

import json
from pathlib import Path

import eccv_caption
import numpy as np
import pytest

from vse_ray.evaluation.eccv import eccv_positives

DATA = Path(eccv_caption.__file__).parent / "data"


def test_masks_follow_the_annotation_files(tmp_path):
    i2t = json.loads((DATA / "eccv_image_to_caption.json").read_text())
    coco_image = int(next(iter(i2t)))
    coco_captions = i2t[str(coco_image)][:3]
    captions = {str(100 + k): c for k, c in enumerate(coco_captions)}
    ids = {"images": {"7": coco_image, "8": 1}, "captions": captions}
    (tmp_path / "ids.json").write_text(json.dumps(ids))
    masks = eccv_positives(tmp_path / "ids.json", np.array([7, 8]), np.array([100, 101, 102, 103]))
    assert masks["i2t"].tolist() == [[True, True, True, False], [False] * 4]
    t2i = json.loads((DATA / "eccv_caption_to_image.json").read_text())
    expected = [[coco_image in t2i.get(str(c), []), False] for c in coco_captions] + [[False, False]]
    assert masks["t2i"].tolist() == expected


def test_missing_image_id_is_named(tmp_path):
    (tmp_path / "ids.json").write_text(json.dumps({"images": {"1": 5}, "captions": {}}))
    with pytest.raises(ValueError, match=r"image_id\(s\) \[2\]"):
        eccv_positives(tmp_path / "ids.json", np.array([1, 2]), np.array([3]))
