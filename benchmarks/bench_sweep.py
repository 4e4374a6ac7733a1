"""Sweep trial modes: single-process trials (`process`) vs a TorchTrainer per trial (`ddp`), same space/seed.

Prints seconds per trial for each mode and the ratio ddp / process (> 1: process trials are faster), and the
best rsum of each (the modes train the same model; with one DDP worker the numbers should match).

    python benchmarks/bench_sweep.py --trials 4 --epochs 2 [--data-dir DIR]
Without --data-dir a small embedded dataset (200 / 50 / 50 images, tiny random CNN) is precomputed into a
temporary folder.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import ray

REPO = Path(__file__).resolve().parents[1]
SPACE = """
loss: lseh
params:
  lr: {loguniform: [1.0e-4, 1.0e-2]}
  loss_params:
    lam: {uniform: [0.0, 0.05]}
"""
SMALL_MODEL = {"batch_size": 16, "word_dim": 16, "embed_dim": 32, "cs_ks": [5, 10], "ncs_ks": [1, 5]}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument(
        "--data-dir", default=None, help="precompute folder (default: a small embedded dataset)"
    )
    parser.add_argument("--num-cpus", type=int, default=4, help="logical CPUs of the local Ray")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    from vse_ray.tune.sweep import check_sweep, run_sweep
    from vse_ray.tune.sweep_config import SweepConfig

    ray.init(num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    with tempfile.TemporaryDirectory(prefix="bench_sweep_") as tmp:
        root = Path(tmp)
        if args.data_dir is None:
            from vse_ray.data.precompute.config import PrecomputeConfig
            from vse_ray.data.precompute.run import precompute

            data_dir = str(root / "store")
            small = PrecomputeConfig(dataset="synthetic", n_train=200, n_val=50, n_test=50, cnn="tiny")
            precompute(small, data_dir, verbose=False)
        else:
            data_dir = args.data_dir
        (root / "space.yaml").write_text(SPACE)
        seconds, best = {}, {}
        for mode in ("process", "ddp"):
            cfg = SweepConfig(
                space=str(root / "space.yaml"),
                data_dir=data_dir,
                train={"epochs": args.epochs, "cpus_per_worker": 1.0, **SMALL_MODEL},
                num_samples=args.trials,
                scheduler="fifo",
                trial_mode=mode,
                cpus_per_trial=1.0,
                name=f"bench-{mode}",
                output_dir=str(root / "out"),
                experiment="bench-sweep",
            )
            start = time.perf_counter()
            result = run_sweep(check_sweep(cfg))
            seconds[mode] = (time.perf_counter() - start) / args.trials
            best[mode] = result.best_metrics.get("rsum")
    ray.shutdown()
    print(f"\ntrials={args.trials} epochs={args.epochs} logical_cpus={args.num_cpus}")
    for mode in seconds:
        print(f"{mode:8s} {seconds[mode]:7.2f} s/trial   best rsum {best[mode]}")
    print(f"ratio ddp/process: {seconds['ddp'] / seconds['process']:.2f}x")


if __name__ == "__main__":
    main()
