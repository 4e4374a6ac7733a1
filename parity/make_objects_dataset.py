"""Few coloured objects among noise regions, with template captions, in the "precomp" format.

Unlike `make_region_dataset.py` (every region carries signal of a rendered scene, captions describe five
attributes), this dataset is made of the cases where a loss or a sampler that treats captions as unique meets
its limits:

- each image holds 1-3 objects, distinct (colour, kind) pairs out of 8 × 12; an object fills 1-2 regions with
  a fixed random prototype of its pair (N(0, `--prototype`²) per dimension) plus N(0, 1) noise, the other
  regions are N(0, 1) noise, and the regions are shuffled;
- the five captions of an image are templates that name its objects with their colours ("a red ball",
  "there is a red ball", "a red ball and a blue car", "a blue car next to a red ball", ...), so many captions
  are word-for-word identical across images (one-object images share all five).

Captions are lower case without punctuation. Written files as `make_region_dataset.py` writes them:
`{train,dev,test}_ims.npy` (N, R, D) float32, `{split}_caps.txt` and the training vocabulary `vocab.json`.

    python parity/make_objects_dataset.py --out data/objects
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from make_region_dataset import SPLIT_FILES, write_vocab

COLOURS = ("red", "blue", "green", "yellow", "black", "white", "purple", "orange")
KINDS = ("ball", "car", "cup", "chair", "dog", "cat", "book", "lamp", "box", "hat", "shoe", "bird")
TEMPLATES = {
    1: ("a {0}", "there is a {0}", "a photo of a {0}", "one {0}", "a {0} alone"),
    2: (
        "a {0} and a {1}",
        "a {1} next to a {0}",
        "there is a {0} and a {1}",
        "a {0} with a {1}",
        "two things a {1} and a {0}",
    ),
    3: (
        "a {0} a {1} and a {2}",
        "a {2} next to a {0} and a {1}",
        "there is a {0} a {1} and a {2}",
        "a {1} with a {2} and a {0}",
        "three things a {2} a {0} and a {1}",
    ),
}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="output folder (created)")
    parser.add_argument("--sizes", type=int, nargs=3, default=(1000, 200, 200), help="train dev test images")
    parser.add_argument("--regions", type=int, default=36, help="regions per image (R)")
    parser.add_argument("--dim", type=int, default=256, help="region feature width (D)")
    parser.add_argument("--prototype", type=float, default=1.5, help="std of an object's prototype")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def one_image(
    prototypes: np.ndarray, args: argparse.Namespace, rng: np.random.Generator
) -> tuple[np.ndarray, list[str]]:
    """The (R, D) regions and five captions of one image."""
    count = int(rng.integers(1, 4))
    pairs = rng.choice(len(COLOURS) * len(KINDS), size=count, replace=False)
    features = rng.standard_normal((args.regions, args.dim)).astype(np.float32)
    row = 0
    for pair in pairs:
        for _ in range(int(rng.integers(1, 3))):
            features[row] += prototypes[pair]
            row += 1
    names = [f"{COLOURS[p // len(KINDS)]} {KINDS[p % len(KINDS)]}" for p in pairs]
    captions = [template.format(*names) for template in TEMPLATES[count]]
    return features[rng.permutation(args.regions)], captions


def main() -> None:
    args = parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng([args.seed, 2])
    prototypes = (args.prototype * rng.standard_normal((len(COLOURS) * len(KINDS), args.dim))).astype(
        np.float32
    )
    for name, size in zip(SPLIT_FILES, args.sizes, strict=True):
        images = [one_image(prototypes, args, rng) for _ in range(size)]
        np.save(out / f"{name}_ims.npy", np.stack([features for features, _ in images]))
        (out / f"{name}_caps.txt").write_text("\n".join(c for _, caps in images for c in caps) + "\n")
    size = write_vocab(out)
    print(f"{out}: {'/'.join(map(str, args.sizes))} images x {args.regions} x {args.dim}, vocabulary {size}")


if __name__ == "__main__":
    main()
