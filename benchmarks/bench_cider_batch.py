"""A training batch's CIDEr-D from stored tf-idf vectors against pycocoevalcap, on real captions.

For each captions file (5 lines per image, image order; Flickr30K dev and test when `../shared/data/` has
them, skipped otherwise), each batch takes B distinct random images and one random caption of each as
hypotheses, like a training batch, and compares its whole B x B matrix with pycocoevalcap on every pair,
two ways:

- document frequencies over all images of the file (training counts them over the train images): the vectors
  are made once for the whole file, as precompute does, and pycocoevalcap's scorer is given the same counts;
- plain ``Cider().compute_score`` over the batch's images (frequencies over those images), vectors made for
  them.

It also times, on the same batch, the vector path of a training step (look-up + tensor kernel) against
building the matrix from the caption texts with the all-pairs text kernel (the step's former path).

`--device cuda` instead compares the matrix a GPU step builds (the same kernel on the device) with the host's,
batch for batch, and times both; it needs no pycocoevalcap.

    python benchmarks/bench_cider_batch.py
    python benchmarks/bench_cider_batch.py --batches 4 --captions /data/f30k_dev_caps.txt
    python benchmarks/bench_cider_batch.py --device cuda
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
from bench_losses import median_ms

from vse_ray.relevance import (
    CiderDocFreq,
    CiderReferences,
    CiderVectors,
    cider_doc_freq,
    cider_matrix,
    tokenize,
)
from vse_ray.relevance.cider_batch import cider_batch_matrix

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))  # the pycocoevalcap reference the unit tests use

DEFAULT_CAPTIONS = ("../shared/data/f30k_dev_caps.txt", "../shared/data/f30k_test_caps.txt")
TOLERANCE = 1e-6


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--captions", nargs="+", default=list(DEFAULT_CAPTIONS), help="captions files")
    parser.add_argument("--batch", type=int, default=128, help="batch size B")
    parser.add_argument("--batches", type=int, default=2, help="batches per file")
    parser.add_argument("--repeats", type=int, default=20, help="timed runs of each path")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument(
        "--clock", choices=("wall", "cpu"), default="wall", help="time wall or this process's CPU time"
    )
    parser.add_argument("--device", help="compare a device's matrix (e.g. cuda) with the host's instead")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def file_store(path: Path) -> tuple[list[list[str]], list[list[str]], CiderDocFreq, CiderReferences]:
    """The file's tokenised captions, their groups of 5 (one image each), the document frequencies over
    all its images and the captions' stored vectors."""
    lines = [tokenize(line) for line in path.read_text().splitlines()]
    groups = [lines[i : i + 5] for i in range(0, len(lines) - 4, 5)]
    caption_ids, image_ids = np.arange(5 * len(groups)), np.arange(5 * len(groups)) // 5
    file_df = cider_doc_freq(groups)
    vectors = CiderVectors.from_texts(lines[: 5 * len(groups)], file_df)
    return lines, groups, file_df, CiderReferences(vectors, caption_ids, image_ids)


def check_device(path: Path, args: argparse.Namespace, rng: np.random.Generator) -> float:
    """Max |device - host| over the file's batches, and each path's median time per batch."""
    _, groups, _, store = file_store(path)
    device = torch.device(args.device)
    worst = 0.0
    for _ in range(args.batches):
        images = rng.choice(len(groups), args.batch, replace=False)
        batch = store.batch(5 * images + rng.integers(0, 5, args.batch), images)
        host = cider_batch_matrix(batch)
        worst = max(worst, float((cider_batch_matrix(batch, device).cpu() - host).abs().max()))
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    host_ms = median_ms(lambda: cider_batch_matrix(batch), args.repeats, 1)
    device_ms = median_ms(lambda: (cider_batch_matrix(batch, device), sync()), args.repeats, 1)
    print(f"{path}: max |{device} - host| {worst:.2e}; host {host_ms:.1f} ms, {device} {device_ms:.1f} ms")
    return worst


def check_file(path: Path, args: argparse.Namespace, rng: np.random.Generator) -> float:
    """Max |diff| against pycocoevalcap over the file's batches (both document-frequency scopes)."""
    from tests.unit.relevance._pycoco import reference_all_pairs

    lines, groups, file_df, store = file_store(path)
    worst = 0.0
    print(f"\n{path}: {len(groups):,} images, B = {args.batch}")
    for b in range(args.batches):
        images = rng.choice(len(groups), args.batch, replace=False)
        captions = 5 * images + rng.integers(0, 5, args.batch)
        hyps, refs = [lines[c] for c in captions], [groups[i] for i in images]
        start = time.perf_counter()
        expected = reference_all_pairs(hyps, refs, file_df).T
        reference_s = time.perf_counter() - start
        got = cider_batch_matrix(store.batch(captions, images)).numpy()
        diff_file = float(np.abs(got - expected).max())
        batch_df = cider_doc_freq(refs)  # pycocoevalcap's own counts: the images of its call
        local = CiderReferences(
            CiderVectors.from_texts([c for g in refs for c in g], batch_df),
            (5 * images[:, None] + np.arange(5)).ravel(),
            np.repeat(images, 5),
        )
        got_local = cider_batch_matrix(local.batch(captions, images)).numpy()
        diff_local = float(np.abs(got_local - reference_all_pairs(hyps, refs).T).max())
        worst = max(worst, diff_file, diff_local)
        print(
            f"  batch {b}: max |diff| {diff_file:.2e} (file doc freqs), {diff_local:.2e} (the batch's, plain "
            f"Cider), values up to {got.max():.2f}; pycocoevalcap {reference_s:.1f} s for {got.size:,} pairs"
        )
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    vectors_ms = median_ms(lambda: cider_batch_matrix(store.batch(captions, images)), args.repeats, 1, clock)
    text_ms = median_ms(lambda: cider_matrix(hyps, refs, file_df), args.repeats, 1, clock)
    print(
        f"  one batch's matrix ({args.clock} clock, median): vectors {vectors_ms:.1f} ms (look-up + tensor "
        f"kernel), text {text_ms:.1f} ms (all-pairs text kernel): {text_ms / vectors_ms:.1f}x"
    )
    return worst


def main() -> None:
    args = parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    rng = np.random.default_rng(args.seed)
    paths = [(REPO_ROOT / p).resolve() for p in args.captions]
    present = [p for p in paths if p.is_file()]
    for missing in sorted(set(paths) - set(present)):
        print(f"skipped {missing}: not found")
    if not present:
        return
    if args.device:
        worst = max(check_device(path, args, rng) for path in present)
        print(f"max |{args.device} - host|: {worst:.2e} (target <= {TOLERANCE})")
        return
    worst = max(check_file(path, args, rng) for path in present)
    verdict = "met" if worst <= TOLERANCE else "NOT met"
    print(
        f"\nmax |diff| against pycocoevalcap on real captions: {worst:.2e} (target <= {TOLERANCE}: {verdict})"
    )


if __name__ == "__main__":
    main()
