"""GSMN's released data folder (CrossmodalGroup/GSMN's download: SCAN's precomp files plus, per split,
``_ims_bbx.npy`` boxes, ``_ims_size.npy`` image sizes and ``_caps.json`` CoreNLP dependency edges) rewritten
as a precomp folder vse_ray's GSMN reads: each region's features followed by its box (x1, y1, x2, y2) divided
by the image's width and height, the captions unchanged, and one ``graphs.json`` {caption text: edges}.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vse_ray.data.precompute.config import PRECOMP_TEST_FILES
from vse_ray.data.sources.precomp import FILE_SPLITS, load_npy, read_lines

GRAPH_FILE = "graphs.json"


@dataclass(frozen=True)
class GSMNData:
    """What `write_gsmn_data` wrote: the splits (file prefixes), the graph file, its caption count, and the
    texts that occur again with other edges (the first edges kept)."""

    splits: tuple[str, ...]
    graph_path: Path
    captions: int
    conflicting: int


def boxed_features(ims: Path, bbx: Path, sizes: Path, out: Path, chunk: int = 1024) -> tuple[int, ...]:
    """Write ``out`` (N, R, D + 4): the features of ``ims`` and the boxes of ``bbx`` divided by the widths and
    heights of ``sizes`` (an object array of {'image_w', 'image_h'}, as released; read with pickle
    allowed). Returns the written shape."""
    features, boxes = load_npy(ims), load_npy(bbx)
    if features.ndim != 3 or boxes.shape != (*features.shape[:2], 4):
        raise ValueError(
            f"{bbx}: boxes of shape {boxes.shape} do not fit {ims} {features.shape} (expected (N, R, 4))"
        )
    size = np.load(sizes, allow_pickle=True)
    if len(size) != len(features):
        raise ValueError(f"{sizes}: {len(size)} image sizes for {len(features)} images of {ims}")
    try:
        wh = np.array([[s["image_w"], s["image_h"]] for s in size], dtype=np.float32)
    except (TypeError, KeyError, IndexError) as err:
        raise ValueError(f"{sizes}: expected {{'image_w', 'image_h'}} per image ({err!r})") from None
    scale = np.concatenate([wh, wh], axis=1)[:, None]  # (N, 1, 4)
    shape = (*features.shape[:2], features.shape[2] + 4)
    target = np.lib.format.open_memmap(out, mode="w+", dtype=features.dtype, shape=shape)
    for start in range(0, len(features), chunk):
        rows = slice(start, start + chunk)
        normalised = np.asarray(boxes[rows], dtype=np.float32) / scale[rows]
        target[rows] = np.concatenate([features[rows], normalised.astype(features.dtype)], axis=-1)
    target.flush()
    return shape


def caption_graphs(caps: Path, edges: Path, graphs: dict[str, list], conflicting: list[str]) -> None:
    """Add each caption of ``caps`` (one per line, stripped as precompute stores it) with its edges from
    ``edges`` (the released JSON list, one entry per line) to `graphs`; a text seen with other edges keeps
    the first and is listed in `conflicting`."""
    lines = read_lines(caps)
    parsed = json.loads(edges.read_text(encoding="utf-8"))
    if not isinstance(parsed, list) or len(parsed) != len(lines):
        found = len(parsed) if isinstance(parsed, list) else type(parsed).__name__
        raise ValueError(
            f"{edges}: expected a list of {len(lines)} edge lists (one per line of {caps}), found {found}"
        )
    for line, pairs in zip(lines, parsed, strict=True):
        text = line.strip()
        kept = graphs.setdefault(text, pairs)
        if kept != pairs:
            conflicting.append(text)


def write_gsmn_data(precomp_dir: str | Path, out: str | Path) -> GSMNData:
    """Rewrite every split of the released folder ``precomp_dir`` into ``out`` (a new folder)."""
    source, target = Path(precomp_dir), Path(out)
    # COCO's 5,000 test images are the testall files (read with precompute's precomp_test: testall)
    known = dict.fromkeys((*FILE_SPLITS.values(), *PRECOMP_TEST_FILES))
    prefixes = tuple(p for p in known if (source / f"{p}_ims.npy").is_file())
    if not prefixes:
        raise ValueError(f"precomp-dir {source}: no {{{','.join(known)}}}_ims.npy")
    needed = [
        source / f"{p}{suffix}"
        for p in prefixes
        for suffix in ("_ims_bbx.npy", "_ims_size.npy", "_caps.txt", "_caps.json")
    ]
    missing = [path for path in needed if not path.is_file()]
    if missing:
        raise ValueError(
            f"precomp-dir {source}: no {missing[0].name} (GSMN's released data has it per split)"
        )
    if target.exists() and any(target.iterdir()):
        raise ValueError(f"out: {target} is not empty; choose a new folder")
    target.mkdir(parents=True, exist_ok=True)
    graphs: dict[str, list] = {}
    conflicting: list[str] = []
    for p in prefixes:
        boxed_features(
            source / f"{p}_ims.npy",
            source / f"{p}_ims_bbx.npy",
            source / f"{p}_ims_size.npy",
            target / f"{p}_ims.npy",
        )
        shutil.copyfile(source / f"{p}_caps.txt", target / f"{p}_caps.txt")
        caption_graphs(source / f"{p}_caps.txt", source / f"{p}_caps.json", graphs, conflicting)
    graph_path = target / GRAPH_FILE
    graph_path.write_text(json.dumps(graphs), encoding="utf-8")
    return GSMNData(prefixes, graph_path, len(graphs), len(set(conflicting)))
