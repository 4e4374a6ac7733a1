"""The files GSMN reads besides a precomp folder's regions, made for the synthetic parity datasets.

GSMN (CrossmodalGroup/GSMN `dcc0f61`, `data.py`) reads per split, beside `{split}_ims.npy`: the regions'
boxes in pixels (`_ims_bbx.npy`, (N, R, 4)), the image sizes (`_ims_size.npy`, an object array of
{'image_w', 'image_h'}), the captions as token ids (`_precaps_stan.txt`, comma-separated, `<start>` first and
`<end>` last, ids of the vocabulary file) and their dependency edges (`_caps.json`, per caption line the pairs
[governor, dependent] of Stanford CoreNLP's parse, word positions from 1, the root's pair [0, root] first).
`write_gsmn_folder` writes them for a folder of `make_region_dataset.py` or `make_objects_dataset.py`, whose
regions have no positions and whose captions no parse. Both are synthetic:

- **boxes**: the same fixed grid for every image (region k of R fills cell k of a grid of ⌊√R⌋ rows, read
  row by row) in an image of width and height 1, so the boxes are already fractions of the image. The
  released loader divides each image's boxes by its size in place at every read, and its validation gives
  image k the boxes of caption row k (docs/gsmn.md); with a size of 1 and one grid for all images neither
  changes a box, so both codes see the same boxes throughout;
- **dependency edges**: each caption word is governed by the word after it, the last word is the root (a
  right-branching chain). The captions are template phrases of lower-case words without punctuation; a chain
  is a tree over them as a parse is. GSMN's textual kernels are normalised over each word's neighbours, so
  the edges change its scores only by rounding (docs/gsmn.md): the chain stands in for a parse at no cost to
  what is compared.

The captions' ids come from the folder's `vocab.json` (a word it lacks is `<unk>`), the vocabulary the
official side reads (`official_lineage.py`). The regions, captions and vocabulary stay links to the source
folder. `vse-ray gsmn-data` rewrites the result for vse_ray (box columns and `graphs.json`), as it rewrites
GSMN's released download.

    python parity/gsmn_files.py --regions data/scenes_r12 --out data/scenes_r12_gsmn
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
from make_region_dataset import SPLIT_FILES

LINKED = ("_ims.npy", "_caps.txt")


def grid_boxes(regions: int) -> np.ndarray:
    """(R, 4) boxes (x1, y1, x2, y2) of a grid of ⌊√R⌋ rows in the unit square, cell k for region k."""
    rows = max(1, math.isqrt(regions))
    cols = math.ceil(regions / rows)
    k = np.arange(regions)
    x, y = (k % cols) / cols, (k // cols) / rows
    return np.stack([x, y, x + 1 / cols, y + 1 / rows], axis=1).astype(np.float32)


def chain_edges(caption: str) -> list[list[int]]:
    """[governor, dependent] pairs of a caption's words (positions from 1): the root's pair [0, n] first,
    then each word k < n governed by word k + 1."""
    n = len(caption.split())
    return [[0, n]] + [[k + 1, k] for k in range(1, n)]


def caption_ids(caption: str, word2idx: dict[str, int]) -> list[int]:
    """`<start>`, each word's id (`<unk>`'s when the vocabulary lacks it), `<end>`."""
    unk = word2idx["<unk>"]
    words = [word2idx.get(w, unk) for w in caption.split()]
    return [word2idx["<start>"], *words, word2idx["<end>"]]


def write_gsmn_folder(regions: Path, out: Path) -> None:
    """`out`: `regions`' files (linked) and GSMN's per-split files made from them (the module docstring)."""
    out.mkdir(parents=True, exist_ok=True)
    word2idx = json.loads((regions / "vocab.json").read_text())["word2idx"]
    if not (out / "vocab.json").exists():
        (out / "vocab.json").symlink_to(regions / "vocab.json")
    for split in SPLIT_FILES:
        for suffix in LINKED:
            if not (out / f"{split}{suffix}").exists():
                (out / f"{split}{suffix}").symlink_to(regions / f"{split}{suffix}")
        n, r, _ = np.load(regions / f"{split}_ims.npy", mmap_mode="r").shape
        np.save(out / f"{split}_ims_bbx.npy", np.broadcast_to(grid_boxes(r), (n, r, 4)).copy())
        np.save(out / f"{split}_ims_size.npy", np.array([{"image_w": 1.0, "image_h": 1.0}] * n))
        captions = (regions / f"{split}_caps.txt").read_text().splitlines()
        ids = [",".join(map(str, caption_ids(c, word2idx))) for c in captions]
        (out / f"{split}_precaps_stan.txt").write_text("\n".join(ids) + "\n")
        (out / f"{split}_caps.json").write_text(json.dumps([chain_edges(c) for c in captions]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--regions", type=Path, required=True, help="a precomp folder of the parity makers")
    parser.add_argument("--out", type=Path, required=True, help="the folder GSMN reads (created)")
    args = parser.parse_args()
    write_gsmn_folder(args.regions, args.out)


if __name__ == "__main__":
    main()
