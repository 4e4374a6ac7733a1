"""Forward + backward time of `infonce` and `siglip` against open_clip's `ClipLoss` and `SigLipLoss`, on
the same embeddings in the same run, as ratios (vse_ray / open_clip); the multi-positive and graded targets
as ratios to the hard ones.

The losses are timed round-robin (each repeat runs every loss once) and medians are reported, so that
changing machine load affects all of them alike; with ``--threads 1`` on the CPU each is timed in this
process's CPU time, which other jobs on a shared machine do not inflate. Each step includes the gradients
of the embeddings and of the logit scale (and bias).

    python benchmarks/bench_contrastive.py
    python benchmarks/bench_contrastive.py --batch 1024 --threads 1
    python benchmarks/bench_contrastive.py --device cuda --batch 4096
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from open_clip.loss import ClipLoss, SigLipLoss

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_losses import round_robin_median_ms, synchronised  # noqa: E402

from vse_ray.losses import make_loss  # noqa: E402

TARGET = 1.1  # vse_ray's hard loss at most 10 % slower than open_clip's


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batch", type=int, default=256, help="batch size B")
    parser.add_argument("--dim", type=int, default=512, help="embedding size D")
    parser.add_argument("--repeats", type=int, default=100, help="timed rounds, each runs every loss once")
    parser.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    parser.add_argument("--device", default="cpu", help="device of the embeddings (cpu, cuda)")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    gen = torch.Generator().manual_seed(args.seed)
    base = torch.randn(args.batch, args.dim, generator=gen)
    img = torch.nn.functional.normalize(base, dim=1).to(device).requires_grad_()
    txt = torch.nn.functional.normalize(base + torch.randn(args.batch, args.dim, generator=gen), dim=1)
    txt = txt.to(device).requires_grad_()
    ids = torch.randint(0, args.batch // 2, (args.batch,), generator=gen).to(device)  # repeated images
    vec = torch.nn.functional.normalize(torch.randn(args.batch, 32, generator=gen), dim=1)
    rel = (vec @ vec.T).to(device)
    print(f"B = {args.batch}, D = {args.dim}, device = {device}, torch threads = {torch.get_num_threads()}\n")

    scale = torch.tensor(math.log(1 / 0.07), device=device, requires_grad=True)
    sig_scale = torch.tensor(math.log(10.0), device=device, requires_grad=True)
    bias = torch.tensor(-10.0, device=device, requires_grad=True)
    clip_loss, siglip_loss = ClipLoss(), SigLipLoss()
    steps: dict[str, Callable[[], object]] = {
        "open_clip ClipLoss": lambda: clip_loss(img, txt, scale.exp()).backward(),
        "open_clip SigLipLoss": lambda: siglip_loss(img, txt, sig_scale.exp(), bias).backward(),
    }
    for name in ("infonce", "siglip"):
        for targets in ("hard", "multi", "graded"):
            loss = make_loss(name, targets=targets).to(device)
            steps[f"{name} {targets}"] = lambda loss=loss: loss(img, txt, rel, ids).backward()
    clock = time.process_time if torch.get_num_threads() == 1 and device.type == "cpu" else time.perf_counter
    fns = {k: synchronised(fn, device) for k, fn in steps.items()}
    times = round_robin_median_ms(fns, args.repeats, clock=clock)

    reference = {"infonce": "open_clip ClipLoss", "siglip": "open_clip SigLipLoss"}
    print(f"{'loss':<22} {'fwd+bwd ms':>10} {'ratio':>7}  against")
    for key, ms in times.items():
        if key.startswith("open_clip"):
            print(f"{key:<22} {ms:>10.3f}")
            continue
        name, targets = key.split()
        against = reference[name] if targets == "hard" else f"{name} hard"
        ratio = ms / times[against]
        verdict = f"  (target <= {TARGET}: {'yes' if ratio <= TARGET else 'NO'})" if targets == "hard" else ""
        print(f"{key:<22} {ms:>10.3f} {ratio:>6.2f}x  {against}{verdict}")


if __name__ == "__main__":
    main()
