"""All B × B pairs of a training batch scored by SCAN / SGRAF in vectorised blocks, against per-pair and
per-caption Python loops over the same model (the per-caption loop is the reference codes' form), one run.

Each model's batched ``score`` must be at least 20× faster than the per-pair loop at B = 128, with equal
values (largest absolute difference printed). Region features are random (B, R, D); captions have 8-16 words.

    python benchmarks/bench_pair_scoring.py                      # B = 128, E = 1024 (the papers' sizes)
    python benchmarks/bench_pair_scoring.py --embed-dim 256 --threads 1
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
from torch import Tensor, nn

from vse_ray.models.scan import SCANModel
from vse_ray.models.sgraf import SGRAFModel

TARGET_SPEEDUP = 20.0
MODELS = ("scan_t2i_lse", "scan_i2t_mean", "sgraf_sgr", "sgraf_saf")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batch", type=int, default=128, help="batch size B")
    parser.add_argument("--regions", type=int, default=36, help="regions per image R")
    parser.add_argument("--feature-dim", type=int, default=2048, help="region feature size D")
    parser.add_argument("--embed-dim", type=int, default=1024, help="joint feature size E")
    parser.add_argument("--sim-dim", type=int, default=256, help="SGRAF similarity representation size")
    parser.add_argument(
        "--repeats", type=int, default=3, help="timed runs of the batched and per-caption forms"
    )
    parser.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    parser.add_argument(
        "--models", nargs="+", choices=MODELS, default=list(MODELS), help="models to time (default: all)"
    )
    parser.add_argument("--device", default="cpu", help="device of the models and inputs (cpu, cuda)")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def median_s(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()  # CUDA runs asynchronously: wait for the queued work
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def pair_scorer(model: nn.Module, regions: Tensor) -> Callable[[slice, Tensor, Tensor], Tensor]:
    """``score(rows, words, lengths)``: images ``regions[rows]`` against some captions, with what is computed
    once per batch (SGRAF's global image vectors) kept out of the loops."""
    if isinstance(model, SGRAFModel):
        image_global = model.image_global(regions)
        return lambda rows, w, n: model.score_block(regions[rows], image_global[rows], w, n)
    return lambda rows, w, n: model.score_block(regions[rows], w, n)


def per_pair_loop(model: nn.Module, regions: Tensor, words: Tensor, lengths: Tensor) -> Tensor:
    """S(I_i, T_j) one pair at a time, each caption cut to its own length."""
    score = pair_scorer(model, regions)
    out = torch.empty(regions.shape[0], words.shape[0], dtype=regions.dtype, device=regions.device)
    for j in range(words.shape[0]):
        caption, length = words[j : j + 1, : int(lengths[j])], lengths[j : j + 1]
        for i in range(regions.shape[0]):
            out[i, j] = score(slice(i, i + 1), caption, length)[0, 0]
    return out


def per_caption_loop(model: nn.Module, regions: Tensor, words: Tensor, lengths: Tensor) -> Tensor:
    """One caption against every image at a time, as the reference implementations loop."""
    score = pair_scorer(model, regions)
    rows = slice(None)
    return torch.cat(
        [score(rows, words[j : j + 1, : int(n)], lengths[j : j + 1]) for j, n in enumerate(lengths)], 1
    )


def main() -> None:
    args = parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(args.seed)
    b = args.batch
    device = torch.device(args.device)
    features = torch.randn(b, args.regions, args.feature_dim, generator=gen).relu().to(device)
    lengths = torch.randint(8, 17, (b,), generator=gen).to(device)
    tokens = torch.randint(1, 1000, (b, int(lengths.max())), generator=gen).to(device)
    dims = {"vocab_size": 1000, "feature_dim": args.feature_dim, "word_dim": 300, "embed_dim": args.embed_dim}
    build = {
        "scan_t2i_lse": lambda: SCANModel(**dims),
        "scan_i2t_mean": lambda: SCANModel(**dims, direction="i2t", aggregation="mean", lambda_softmax=4.0),
        "sgraf_sgr": lambda: SGRAFModel(**dims, n_regions=args.regions, sim_dim=args.sim_dim, module="sgr"),
        "sgraf_saf": lambda: SGRAFModel(**dims, n_regions=args.regions, sim_dim=args.sim_dim, module="saf"),
    }
    models = {name: build[name]() for name in args.models}
    print(
        f"B = {b}, R = {args.regions}, D = {args.feature_dim}, E = {args.embed_dim}, S = {args.sim_dim}, "
        f"8-16 words, {torch.get_num_threads()} thread(s), {device}; eval mode, no grad"
    )
    print(
        f"{'model':14s} {'batched s':>10s} {'per-caption s':>14s} {'per-pair s':>11s} {'x caption':>10s} "
        f"{'x pair':>8s} {'max |diff|':>11s}  target x pair >= {TARGET_SPEEDUP:.0f}"
    )
    failed = []
    with torch.no_grad():
        for name, model in models.items():
            model.to(device).eval()
            regions, words = model.encode_images(features), model.encode_captions(tokens, lengths)
            batched = model.score(regions, words, lengths)
            t_batched = median_s(lambda m=model, r=regions, w=words: m.score(r, w, lengths), args.repeats)
            t_caption = median_s(
                lambda m=model, r=regions, w=words: per_caption_loop(m, r, w, lengths), args.repeats
            )
            start = time.perf_counter()
            looped = per_pair_loop(model, regions, words, lengths)
            if device.type == "cuda":
                torch.cuda.synchronize()
            t_pair = time.perf_counter() - start
            diff = float((batched - looped).abs().max())
            speedup = t_pair / t_batched
            ratio = t_caption / t_batched
            print(
                f"{name:14s} {t_batched:10.3f} {t_caption:14.3f} {t_pair:11.2f} {ratio:10.1f} "
                f"{speedup:8.1f} {diff:11.2e}"
            )
            if speedup < TARGET_SPEEDUP or diff > 1e-5:
                failed.append(name)
    print("FAILED: " + ", ".join(failed) if failed else "all models meet the target with equal values")


if __name__ == "__main__":
    main()
