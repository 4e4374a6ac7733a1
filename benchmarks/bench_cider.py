"""All-pairs CIDEr-D: vse_ray's sparse kernel against pycocoevalcap, on the Flickr30K test captions.

pycocoevalcap scores one hypothesis per image per call, so the full (captions x images) matrix takes
n_captions calls over all images; a few random calls give its time per pair and the reference values.

    python benchmarks/bench_cider.py                 # Flickr30K test: 5,000 captions x 1,000 images
    python benchmarks/bench_cider.py --coco5k        # also a synthetic COCO-5K-sized problem (25,000 x 5,000)
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np
from pycocoevalcap.cider.cider import Cider

from vse_ray.relevance import cider_matrix, tokenize

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CAPTIONS = "../shared/data/f30k_test_caps.txt"


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--captions", default=DEFAULT_CAPTIONS, help="captions file, N per image in order")
    parser.add_argument("--per-image", type=int, default=5, help="captions per image")
    parser.add_argument("--calls", type=int, default=2, help="pycocoevalcap calls (one pair per image each)")
    parser.add_argument("--chunk-size", type=int, default=4096, help="cider_matrix chunk_size")
    parser.add_argument("--repeats", type=int, default=3, help="cider_matrix runs (best is reported)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--coco5k", action="store_true", help="also time a 25,000 x 5,000 synthetic problem")
    return parser.parse_args()


def _peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # Linux reports KiB


def _reference_sample(captions, refs, calls, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """``calls`` pycocoevalcap runs scoring one random caption per image: pairs, scores, seconds/pair."""
    hyp_ids, image_ids, scores, elapsed = [], [], [], 0.0
    images = np.arange(len(refs))
    for _ in range(calls):
        assign = rng.integers(0, len(captions), size=len(refs))
        start = time.perf_counter()
        _, call_scores = Cider().compute_score(
            {i: refs[i] for i in images}, {i: [captions[j]] for i, j in zip(images, assign, strict=True)}
        )
        elapsed += time.perf_counter() - start
        hyp_ids.append(assign), image_ids.append(images), scores.append(call_scores)
    per_pair = elapsed / (calls * len(refs))
    return np.concatenate(hyp_ids), np.concatenate(image_ids), np.concatenate(scores), per_pair


def _run(name: str, captions: list[str], per_image: int, repeats: int, args, rng) -> None:
    refs = [captions[i : i + per_image] for i in range(0, len(captions), per_image)]
    ours = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        matrix = cider_matrix(captions, refs, chunk_size=args.chunk_size)
        ours = min(ours, time.perf_counter() - start)
    hyp_ids, image_ids, expected, per_pair = _reference_sample(captions, refs, args.calls, rng)
    max_diff = float(np.abs(matrix[hyp_ids, image_ids] - expected).max())
    reference_total = per_pair * matrix.size
    print(f"\n{name}: {len(captions):,} captions x {len(refs):,} images ({matrix.size:,} pairs)")
    print(f"{'':34}{'seconds':>12}")
    print(f"{'vse_ray cider_matrix (all pairs)':34}{ours:12.2f}   (best of {repeats})")
    print(f"{'pycocoevalcap, extrapolated':34}{reference_total:12.0f}   ({per_pair * 1e3:.3f} ms/pair)")
    print(f"{'speed-up':34}{reference_total / ours:12.0f}x")
    print(f"{'max |diff| on sampled pairs':34}{max_diff:12.2e}   ({len(expected):,} pairs, must be <= 1e-6)")
    print(f"{'peak RSS of the process (GiB)':34}{_peak_rss_gib():12.2f}")


def _synthetic_coco5k(captions: list[str], rng: np.random.Generator) -> list[str]:
    """25,000 captions: the given ones, then copies with one word replaced by a random corpus word."""
    words = [w for caption in captions for w in caption.split()]
    out = []
    for k in range(25_000):
        tokens = captions[k % len(captions)].split()
        if k >= len(captions) and tokens:
            tokens[rng.integers(len(tokens))] = words[rng.integers(len(words))]
        out.append(" ".join(tokens))
    return [out[i] for i in rng.permutation(len(out))]


def main() -> int:
    args = _parse_args()
    path = (REPO_ROOT / args.captions).resolve()
    if not path.is_file():
        print(f"captions file {path} not found: nothing to benchmark")
        return 0
    captions = [tokenize(line) for line in path.read_text().splitlines()]
    captions = captions[: len(captions) - len(captions) % args.per_image]
    rng = np.random.default_rng(args.seed)
    _run(path.name, captions, args.per_image, args.repeats, args, rng)
    if args.coco5k:
        _run("synthetic COCO 5K", _synthetic_coco5k(captions, rng), 5, 1, args, rng)
    return 0


if __name__ == "__main__":
    sys.exit(main())
