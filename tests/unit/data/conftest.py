"""Tiny inputs written by the tests: Karpathy JSON with PNG files, precomp folders."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from vse_ray.data.synthetic.dataset import generate_synthetic


def write_karpathy(root: Path, n_per_split: dict[str, int], captions: int = 5) -> Path:
    """A Karpathy JSON under ``root``, rendered PNGs in ``root/images/val2014/``; returns the JSON path."""
    data = generate_synthetic(sum(n_per_split.values()), 0, 0, image_size=24, seed=5)
    images, k, sentid = [], 0, 0
    for split, n in n_per_split.items():
        for _ in range(n):
            folder = root / "images" / "val2014"
            folder.mkdir(parents=True, exist_ok=True)
            Image.fromarray(data.images[k]).save(folder / f"img{k}.png")
            caps = list(data.captions[k]) + ["an extra sixth caption"]
            sentences = [{"raw": c, "sentid": sentid + j} for j, c in enumerate(caps[:captions])]
            images.append(
                {
                    "filepath": "val2014",
                    "filename": f"img{k}.png",
                    "imgid": 100 + k,
                    "split": split,
                    "sentences": sentences,
                }
            )
            k, sentid = k + 1, sentid + len(sentences)
    path = root / "dataset_coco.json"
    path.write_text(json.dumps({"images": images, "dataset": "coco"}))
    return path


def write_precomp(
    root: Path, n: dict[str, int], per_caption: bool = False, dim: int = 6, regions: int | None = None
) -> Path:
    """``{prefix}_ims.npy`` and ``_caps.txt`` per prefix in ``n``; features = image index + column / 10
    (with ``regions``: (count, regions, dim), region r adding r / 100)."""
    root.mkdir(parents=True, exist_ok=True)
    for prefix, count in n.items():
        feats = np.arange(count, dtype=np.float32)[:, None] + np.arange(dim, dtype=np.float32) / 10
        if regions:
            feats = feats[:, None, :] + np.arange(regions, dtype=np.float32)[None, :, None] / 100
        np.save(root / f"{prefix}_ims.npy", np.repeat(feats, 5, axis=0) if per_caption else feats)
        lines = [
            f"a {'red blue green'.split()[k % 3]} shape number {k} caption {j}"
            for k in range(count)
            for j in range(5)
        ]
        (root / f"{prefix}_caps.txt").write_text("\n".join(lines) + "\n")
    return root


@pytest.fixture()
def karpathy_json(tmp_path) -> Path:
    return write_karpathy(tmp_path, {"train": 3, "restval": 2, "val": 2, "test": 1})
