"""The InfoNCE step of one worker under DDP with `loss_span: local` (its B queries of each direction against
the W·B candidates, open_clip's ``local_loss``) against `loss_span: global` (the (W·B)² matrix of the gathered
batch), and open_clip's ``ClipLoss(local_loss=True, gather_with_grad=True)``, on W Gloo processes on the CPU.

Each step is the loss's forward and backward from this worker's (B, D) embeddings: gathering, logits, the
loss, the gradients of the embeddings and the logit scale, and the collectives of both passes. Timed
round-robin (every repeat runs each once, all workers in step), medians of rank 0's wall time and of its own
CPU time (one torch thread per process), with ratios to the global loss.

    python benchmarks/bench_loss_span.py --batch 256 --workers 2
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_losses import round_robin_median_ms  # noqa: E402

from vse_ray.losses import make_loss  # noqa: E402
from vse_ray.train.gather import gather_with_grad, gather_with_local_grad, share_loss_gradients  # noqa: E402


def _steps(rank: int, world: int, batch: int, dim: int) -> dict:
    from open_clip.loss import ClipLoss

    gen = torch.Generator().manual_seed(rank)
    img = torch.nn.functional.normalize(torch.randn(batch, dim, generator=gen), dim=1).requires_grad_()
    txt = torch.nn.functional.normalize(img.detach() + torch.randn(batch, dim, generator=gen), dim=1)
    txt.requires_grad_()
    loss = make_loss("infonce")
    scale = torch.tensor(math.log(1 / 0.07), requires_grad=True)
    clip_loss = ClipLoss(local_loss=True, gather_with_grad=True, rank=rank, world_size=world)

    def global_step() -> None:
        everyone = [gather_with_local_grad(t, rank, world) for t in (img, txt)]
        (loss.from_similarity(everyone[0] @ everyone[1].T) * world).backward()
        share_loss_gradients(loss.parameters(), world)

    def local_step() -> None:
        everyone = [gather_with_grad(t, rank, world) for t in (img, txt)]
        rows = torch.stack((img @ everyone[1].T, txt @ everyone[0].T))
        loss.from_local_similarity(rows, rank * batch).backward()
        share_loss_gradients(loss.parameters(), 1)

    def open_clip_step() -> None:
        clip_loss(img, txt, scale.exp()).backward()
        dist.all_reduce(scale.grad)  # as DDP averages a model's scale

    return {"global (W·B)²": global_step, "local B × W·B": local_step, "open_clip local_loss": open_clip_step}


def _worker(rank: int, world: int, args: argparse.Namespace, store: str, out: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    try:
        steps = _steps(rank, world, args.batch, args.dim)
        wall = round_robin_median_ms(steps, args.repeats)
        cpu = round_robin_median_ms(steps, args.repeats, clock=time.process_time)
        if rank == 0:
            torch.save({"wall": wall, "cpu": cpu}, out)
    finally:
        dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batch", type=int, default=256, help="pairs per worker B")
    parser.add_argument("--dim", type=int, default=512, help="embedding size D")
    parser.add_argument("--workers", type=int, default=2, help="Gloo processes W")
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = f"{tmp}/times.pt"
        mp.spawn(_worker, args=(args.workers, args, f"{tmp}/store", out), nprocs=args.workers, join=True)
        times = torch.load(out)
    print(f"W = {args.workers} Gloo workers x B = {args.batch} pairs, D = {args.dim}, one torch thread each")
    print(f"{'loss':<22} {'wall ms':>9} {'ratio':>6} {'CPU ms':>9} {'ratio':>6}  (ratio: time / global's)")
    wall, cpu = times["wall"], times["cpu"]
    for name in wall:
        w, c = wall[name] / wall["global (W·B)²"], cpu[name] / cpu["global (W·B)²"]
        print(f"{name:<22} {wall[name]:>9.2f} {w:>5.2f}x {cpu[name]:>9.2f} {c:>5.2f}x")


if __name__ == "__main__":
    main()
