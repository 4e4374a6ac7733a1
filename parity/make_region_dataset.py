"""A small learnable region-feature dataset in the VSE++/SCAN/VSE∞ "precomp" format.

Images are the embedded synthetic scenes (:mod:`vse_ray.data.synthetic.dataset`); their five captions are
written from
the scene alone (:mod:`vse_ray.data.synthetic.scene_captions`), lower-cased with punctuation removed
(:func:`vse_ray.relevance.tokenize`), so a whitespace split and NLTK's word tokenizer give the same tokens.
Each image gets R region features of width D:

- every object of the scene gives `--regions-per-object` regions, each a fixed random linear map of the
  object's one-hot attributes (kind, colour, size, position) plus Gaussian noise;
- `--background-regions` regions map the background colour and texture the same way;
- the remaining regions are noise only; the regions of an image are in random order.

The map and the noise are seeded, so the folder is the same on every run. Written files:
`{train,dev,test}_ims.npy` (N, R, D) float32, `{train,dev,test}_caps.txt` (five lines per image, in image
order) and `vocab.json` ({"word2idx", "idx2word", "idx"}: <pad>, <start>, <end>, <unk>, then every training
word seen at least 4 times, most frequent first), the vocabulary format of the VSE∞ and SCAN code.

    python parity/make_region_dataset.py --out data/regions_small
    vse-ray precompute --dataset precomp --precomp-dir data/regions_small --out data/regions_small_vr
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from vse_ray.data.precompute.vocab import build_vocab
from vse_ray.data.synthetic.dataset import generate_synthetic
from vse_ray.data.synthetic.scene import BACKGROUNDS, COLOURS, POSITIONS, SHAPES, SIZES, TEXTURES, Scene
from vse_ray.relevance import tokenize
from vse_ray.special_tokens import SPECIAL_TOKENS

SPLIT_FILES = ("train", "dev", "test")
VOCAB_SPECIALS = ("<pad>", "<start>", "<end>", "<unk>")
OBJECT_FIELDS = (SHAPES, tuple(COLOURS), SIZES, POSITIONS)
BACKGROUND_FIELDS = (tuple(BACKGROUNDS), TEXTURES)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="output folder (created)")
    parser.add_argument("--sizes", type=int, nargs=3, default=(1000, 200, 200), help="train dev test images")
    parser.add_argument("--regions", type=int, default=36, help="regions per image (R)")
    parser.add_argument("--dim", type=int, default=256, help="region feature width (D)")
    parser.add_argument("--regions-per-object", type=int, default=2)
    parser.add_argument("--background-regions", type=int, default=2)
    parser.add_argument("--noise", type=float, default=3.0, help="std of the Gaussian noise of every region")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def _one_hot_maps(
    fields: tuple[tuple[str, ...], ...], dim: int, rng: np.random.Generator
) -> list[np.ndarray]:
    """One (len(values), dim) matrix per attribute: row v is the image of value v under the linear map."""
    return [rng.standard_normal((len(values), dim)).astype(np.float32) for values in fields]


def scene_regions(
    scene: Scene,
    object_maps: list[np.ndarray],
    background_maps: list[np.ndarray],
    args: argparse.Namespace,
    rng: np.random.Generator,
) -> np.ndarray:
    """The (R, D) region features of one scene (see the module docstring)."""
    rows = []
    for group in scene.groups:
        values = (group.shape, group.colour, group.size, group.position)
        signal = sum(m[f.index(v)] for m, f, v in zip(object_maps, OBJECT_FIELDS, values, strict=True))
        rows += [signal] * (group.count * args.regions_per_object)
    background = (scene.background, scene.texture)
    signal = sum(
        m[f.index(v)] for m, f, v in zip(background_maps, BACKGROUND_FIELDS, background, strict=True)
    )
    rows += [signal] * args.background_regions
    if len(rows) > args.regions:
        raise ValueError(f"{len(rows)} regions needed, --regions is {args.regions}")
    features = np.zeros((args.regions, args.dim), dtype=np.float32)
    features[: len(rows)] = np.stack(rows)
    features += args.noise * rng.standard_normal(features.shape).astype(np.float32)
    return features[rng.permutation(args.regions)]


def main() -> None:
    args = parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    n_train, n_dev, n_test = args.sizes
    data = generate_synthetic(n_train, n_dev, n_test, seed=args.seed, render=False)
    rng = np.random.default_rng([args.seed, 1])
    object_maps = _one_hot_maps(OBJECT_FIELDS, args.dim, rng)
    background_maps = _one_hot_maps(BACKGROUND_FIELDS, args.dim, rng)
    bounds = np.cumsum([0, n_train, n_dev, n_test])
    for name, start, stop in zip(SPLIT_FILES, bounds[:-1], bounds[1:], strict=True):
        ims = np.stack(
            [
                scene_regions(data.scenes[k], object_maps, background_maps, args, rng)
                for k in range(start, stop)
            ]
        )
        np.save(out / f"{name}_ims.npy", ims)
        lines = [tokenize(c) for k in range(start, stop) for c in data.captions[k]]
        (out / f"{name}_caps.txt").write_text("\n".join(lines) + "\n")
    size = write_vocab(out)
    print(f"{out}: {n_train}/{n_dev}/{n_test} images x {args.regions} x {args.dim}, vocabulary {size}")


def write_vocab(out: Path) -> int:
    """`out/vocab.json` from `out/train_caps.txt` in the released codes' format; its size."""
    train_lines = (out / "train_caps.txt").read_text().splitlines()
    words = [w for w in build_vocab(train_lines) if w not in SPECIAL_TOKENS]
    word2idx = {w: i for i, w in enumerate((*VOCAB_SPECIALS, *words))}
    vocab = {"word2idx": word2idx, "idx2word": {str(i): w for w, i in word2idx.items()}, "idx": len(word2idx)}
    (out / "vocab.json").write_text(json.dumps(vocab))
    return len(word2idx)


if __name__ == "__main__":
    main()
