"""Chunked query × gallery evaluation of similarity models: throughput at 1,000 × 5,000 pairs and the peak
memory of one block as the block grows (measured against the ``pair_floats`` estimate the memory check uses).
Throughput uses each model's default pass size; the memory rows score each block in one pass, the worst case.

Peak memory is the process's peak resident set (VmHWM, reset before each block size) over the memory held
before scoring, or the CUDA allocator's peak on a GPU. The gallery's encoded captions and the output matrix
are held either way; only the block's working memory grows with the block.

    python benchmarks/bench_chunked_eval.py                               # E = 64, S = 32 on a small CPU
    python benchmarks/bench_chunked_eval.py --embed-dim 1024 --sim-dim 256 --device cuda
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from vse_ray.evaluation.pair_blocks import block_bytes, score_matrix
from vse_ray.models.scan import SCANModel
from vse_ray.models.sgraf import SGRAFModel


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--images", type=int, default=1000, help="query images")
    parser.add_argument("--captions", type=int, default=5000, help="gallery captions")
    parser.add_argument("--regions", type=int, default=36)
    parser.add_argument("--embed-dim", type=int, default=64, help="E (the papers use 1024)")
    parser.add_argument("--sim-dim", type=int, default=32, help="SGRAF S (the paper uses 256)")
    parser.add_argument("--block", type=int, nargs=2, default=(128, 512), help="images captions per block")
    parser.add_argument("--models", default="scan,sgraf-saf,sgraf-sgr")
    parser.add_argument(
        "--memory-blocks", default="16x64,64x256,128x512,256x1024", help="block sizes to measure"
    )
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    return parser.parse_args()


def reset_peak(device: torch.device) -> int:
    """Start a new peak measurement; return the memory held now (bytes)."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
        return torch.cuda.memory_allocated(device)
    Path("/proc/self/clear_refs").write_text("5")
    return _status_kib("VmRSS") * 1024


def peak(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device)
    return _status_kib("VmHWM") * 1024


def _status_kib(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {key} in /proc/self/status")


def build(name: str, args: argparse.Namespace, device: torch.device):
    dims = {"vocab_size": 1000, "feature_dim": 2048, "word_dim": 300, "embed_dim": args.embed_dim}
    if name == "scan":
        return SCANModel(**dims).to(device).eval()
    module = name.split("-")[1]
    return SGRAFModel(**dims, n_regions=args.regions, sim_dim=args.sim_dim, module=module).to(device).eval()


def encoded(model, n_img: int, n_txt: int, args: argparse.Namespace, device: torch.device):
    gen = torch.Generator().manual_seed(0)
    lengths = torch.randint(8, 17, (n_txt,), generator=gen)
    with torch.no_grad():
        img = torch.cat(
            [
                model.encode_images(torch.randn(256, args.regions, 2048, generator=gen).relu().to(device))
                for _ in range(0, n_img, 256)
            ]
        )[:n_img]
        tokens = torch.randint(1, 1000, (n_txt, 16), generator=gen)
        txt = model.encode_captions(tokens.to(device), lengths.to(device))
    return img, txt, lengths.to(device)


def main() -> None:
    args = parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    print(
        f"{args.images} images x {args.captions} captions, R = {args.regions}, E = {args.embed_dim}, "
        f"S = {args.sim_dim}, 8-16 words, device {device}, {torch.get_num_threads()} thread(s)"
    )
    names = args.models.split(",")
    print(f"\nthroughput, block {args.block[0]} x {args.block[1]}")
    print(f"{'model':10s} {'pairs':>11s} {'seconds':>9s} {'pairs/s':>11s}")
    for name in names:
        model = build(name, args, device)
        img, txt, lengths = encoded(model, args.images, args.captions, args, device)
        start = time.perf_counter()
        score_matrix(model, img, txt, lengths, block=tuple(args.block), progress=False)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        seconds = time.perf_counter() - start
        pairs = args.images * args.captions
        print(f"{name:10s} {pairs:11,d} {seconds:9.1f} {pairs / seconds:11,.0f}")
    if not args.memory_blocks:
        return
    print("\npeak memory of the scoring over what was held before (MiB), against the estimate")
    print(f"{'model':10s} {'block':>10s} {'measured':>9s} {'estimate':>9s}")
    for name in names:
        model = build(name, args, device)
        img, txt, lengths = encoded(model, 256, 1024, args, device)
        for spec in args.memory_blocks.split(","):
            block = tuple(int(v) for v in spec.split("x"))
            model.max_pairs = block[0] * block[1]  # one pass per block: the worst case the estimate bounds
            before = reset_peak(device)
            score_matrix(model, img, txt, lengths, block=block, progress=False)
            measured = (peak(device) - before) / 2**20
            estimate = block_bytes(model, block, args.regions, int(lengths.max()), img.element_size()) / 2**20
            print(f"{name:10s} {spec:>10s} {measured:9.1f} {estimate:9.1f}")


if __name__ == "__main__":
    main()
