"""Benchmark the vectorised metrics against per-query reference loops run in the same process.

CS@K on an (n_queries x n_gallery) matrix against a ``scipy.stats.kendalltau`` loop over each query's
top K (targets: >= 10x at K = 100, >= 3x at K >= 1,000; values must be identical), then the time of
``evaluate_all`` on n_images x n_captions. Run: ``python benchmarks/bench_metrics.py``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import scipy.stats

from vse_ray.metrics import coherent_score, evaluate_all


def scipy_cs_loop(sims: np.ndarray, relevance: np.ndarray, k: int) -> np.ndarray:
    """Reference: per query, stable top-K by similarity, then scipy's Kendall tau-b."""
    taus = np.empty(sims.shape[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for q in range(sims.shape[0]):
            top = np.argsort(-sims[q], kind="stable")[:k]
            taus[q] = scipy.stats.kendalltau(sims[q, top], relevance[q, top]).statistic
    return taus


def timed(fn, *args, repeats: int = 1, **kwargs):
    """Best wall time over ``repeats`` calls and the last result."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn(*args, **kwargs)
        best = min(best, time.perf_counter() - start)
    return best, result


def bench_coherent_score(n_queries: int, n_gallery: int, ks: list[int], ref_queries: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    sims = rng.normal(size=(n_queries, n_gallery)).astype(np.float32)
    relevance = np.round(rng.random((n_queries, n_gallery)), 2).astype(np.float32)  # many ties
    print(f"CS@K on {n_queries} x {n_gallery} (float32; reference loop on {ref_queries} queries, scaled)")
    print(f"{'K':>6} {'vse_ray s':>13} {'scipy loop s':>13} {'speed-up':>9} {'identical':>9}")
    coherent_score(sims[:2, :8], relevance[:2, :8], 4)  # loads (or compiles) the counting kernel once
    for k in ks:
        ours, taus = timed(coherent_score, sims, relevance, k, reduce=False, repeats=3)
        ref, expected = timed(scipy_cs_loop, sims[:ref_queries], relevance[:ref_queries], k)
        ref *= n_queries / ref_queries
        same = np.array_equal(taus[:ref_queries], expected, equal_nan=True)
        print(f"{k:>6} {ours:>13.3f} {ref:>13.3f} {ref / ours:>8.1f}x {same!s:>9}")
        if not same:
            raise SystemExit(f"CS@{k}: values differ from scipy.stats.kendalltau")


def bench_evaluate_all(n_images: int, per_image: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_captions = n_images * per_image
    img_of_cap = np.repeat(np.arange(n_images), per_image)
    sims = rng.normal(size=(n_images, n_captions)).astype(np.float32)
    relevance = {
        "sbert": rng.random((n_images, n_captions)).astype(np.float32),
        "cider": rng.random((n_images, n_captions)).astype(np.float32),
    }
    seconds, scores = timed(evaluate_all, sims, img_of_cap, relevance, sr_ms=(1, 3))
    print(
        f"evaluate_all on {n_images} x {n_captions} with sbert + cider relevance and Semantic Recall "
        f"(m = 1, 3; both conventions): {seconds:.2f} s, {len(scores)} metrics"
    )
    seconds, _ = timed(evaluate_all, sims, img_of_cap)
    print(f"evaluate_all on {n_images} x {n_captions}, binary metrics only: {seconds:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-queries", type=int, default=1000)
    parser.add_argument("--n-gallery", type=int, default=5000)
    parser.add_argument("--ks", type=int, nargs="+", default=[100, 1000, 5000])
    parser.add_argument("--ref-queries", type=int, default=1000, help="queries timed in the scipy loop")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    bench_coherent_score(
        args.n_queries, args.n_gallery, args.ks, min(args.ref_queries, args.n_queries), args.seed
    )
    bench_evaluate_all(args.n_queries, args.n_gallery // args.n_queries, args.seed)


if __name__ == "__main__":
    main()
