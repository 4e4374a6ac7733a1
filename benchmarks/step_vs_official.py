"""vse_ray's training step against the authors' own step: same card, same batch, same sizes, samples/s.

For each system the authors' model object is built from a checkout of its repository and its own `train_emb`
is timed; vse_ray's step is `train_step` on a batch `BatchBuilder` made (its copy to the device included; the
epoch loop builds the next batch while a step runs: `gpu_epoch.py` times that), with the same loss (max of
hinges), optimiser, learning rate and clip. The steps alternate within each repeat, so that load changes hit
both alike. Nothing of the authors' code is copied here; the checkouts are imported from `--official` and
changed at run time only:

- `vsepp`: its loss returns a one-element tensor, since it logs `loss.data[0]`, which PyTorch ≥ 0.5 refuses on
  a 0-dim tensor (the value and its gradient are unchanged);
- `scan`, `sgraf`: imported from a copy of `model.py` made at run time with the edits of
  `parity/official_code.py`'s `EDITS` (`size(2)/2` → `size(2)//2`, Python 2's integer division; SCAN's
  `loss.data[0]` → `loss.item()`; SGRAF's loss moving its diagonal mask with `.cuda()` whether or not it sees
  a GPU: it skips that line, and fails, without one);
- without CUDA, `Tensor.cuda` is a no-op and the authors' code sees no GPU; `nltk`, `tensorboard_logger`,
  `cv2` and `imageio` (imported, unused here) are empty modules when absent.

The authors' batch is host memory, pinned on CUDA as their loaders pin it; VSE∞'s has its region drop (each
region kept with p = 0.8) applied and zero-padded as its `collate_fn` does. `--official` holds the checkouts
as folders `vsepp` (fartashf/vsepp), `vse_infty` (woodfrog/vse_infty, branch bigru), `SCAN` (kuanghuei/SCAN)
and `SGRAF` (Paranioar/SGRAF).

    python benchmarks/step_vs_official.py --official /path/to/checkouts --device cuda
    python benchmarks/step_vs_official.py --official /path/to/checkouts --systems vse_inf --threads 1
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from bench_losses import round_robin_median_ms, synchronised

from vse_ray.data.store.split_data import ImageStore
from vse_ray.losses import make_loss
from vse_ray.models import build_model
from vse_ray.train.batches import BatchBuilder
from vse_ray.train.epoch_loop import train_step
from vse_ray.train.region_drop import draw_region_keep

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "parity"))  # the authors' code run on a modern stack
from official_code import import_patched, no_cuda, stub_modules  # noqa: E402

DEFAULT_CAPTIONS = "../shared/data/f30k_test_caps.txt"
SYSTEMS = ("vsepp", "vse_inf", "scan", "sgraf")
CHECKOUTS = {"vsepp": "vsepp", "vse_inf": "vse_infty", "scan": "SCAN", "sgraf": "SGRAF"}
TARGET = 1.0
REGION_DROP = 0.2  # VSE∞ keeps a region when U(0, 1) > 0.2


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--official", required=True, help="folder holding the authors' checkouts (see above)")
    parser.add_argument("--systems", nargs="+", choices=SYSTEMS, default=list(SYSTEMS))
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--batch", type=int, default=128, help="batch size B")
    parser.add_argument("--regions", type=int, default=36, help="regions per image (VSE∞, SCAN, SGRAF)")
    parser.add_argument("--feature-dim", type=int, default=2048, help="image feature size")
    parser.add_argument("--embed", type=int, default=1024, help="joint embedding size")
    parser.add_argument("--word-dim", type=int, default=300, help="word embedding size")
    parser.add_argument("--vocab", type=int, default=8_481, help="vocabulary size (Flickr30K's: 8,481)")
    parser.add_argument("--repeats", type=int, default=20, help="timed steps per side")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument(
        "--captions", default=DEFAULT_CAPTIONS, help="caption file whose lengths the batch takes"
    )
    parser.add_argument("--json", type=Path, help="also write the results here as JSON")
    parser.add_argument(
        "--profile", action="store_true", help="also print each step's host time by operation"
    )
    return parser.parse_args()


class _NoLog:
    """Stands in for the authors' `LogCollector` (`model.logger`), which only keeps running means."""

    def update(self, *args: object, **kwargs: object) -> None:
        pass


def caption_lengths(path: Path, n: int, rng: np.random.Generator) -> np.ndarray:
    """n caption lengths (words + start and end): the file's captions', or 10-20 without it."""
    if path.is_file():
        lengths = np.array([len(line.split()) + 2 for line in path.read_text().splitlines() if line.strip()])
        return rng.choice(lengths, n)
    return rng.integers(10, 21, n)


class Batch:
    """One batch drawn once: features, token ids longest first (the authors' collate order)."""

    def __init__(self, args: argparse.Namespace, regions: bool, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        shape = (args.batch, args.regions, args.feature_dim) if regions else (args.batch, args.feature_dim)
        self.features = rng.normal(size=shape).astype(np.float32)
        if not regions:
            self.features /= np.linalg.norm(self.features, axis=1, keepdims=True)  # VSE++'s precomp
        lengths = np.sort(caption_lengths((REPO_ROOT / args.captions).resolve(), args.batch, rng))[::-1]
        self.tokens = [rng.integers(4, args.vocab, n).astype(np.int64) for n in lengths]
        self.lengths = [int(n) for n in lengths]
        self.keep = draw_region_keep(args.batch, args.regions, REGION_DROP, rng) if regions else None

    def rows(self) -> dict[str, np.ndarray]:
        """The batch as Ray Data hands it to a worker: one caption of each image."""
        n = len(self.tokens)
        tokens = np.empty(n, dtype=object)
        tokens[:] = self.tokens
        return {"caption_id": np.arange(n) * 5, "image_id": np.arange(n), "tokens": tokens}

    def official(self, device: torch.device, drop: bool) -> tuple[torch.Tensor, ...]:
        """(images, padded ids, image lengths) as the authors' loader yields them, pinned for a GPU."""
        ids = torch.zeros(len(self.tokens), max(self.lengths), dtype=torch.long)
        for i, t in enumerate(self.tokens):
            ids[i, : len(t)] = torch.from_numpy(t)
        features = torch.from_numpy(self.features)
        image_lengths = torch.full((len(self.tokens),), features.shape[1] if features.ndim == 3 else 1)
        if drop and self.keep is not None:  # each image's kept regions in order, zero-padded
            kept = [f[torch.from_numpy(k)] for f, k in zip(features, self.keep, strict=True)]
            image_lengths = torch.tensor([len(k) for k in kept])
            features = torch.nn.utils.rnn.pad_sequence(kept, batch_first=True)
        out = (features, ids, image_lengths)
        return tuple(t.pin_memory() for t in out) if device.type == "cuda" else out


def official_model(system: str, root: Path, args: argparse.Namespace) -> object:
    """The authors' model object of `system`, with their training defaults at the benchmark's sizes."""
    checkout = root / CHECKOUTS[system]
    if not checkout.is_dir():
        raise SystemExit(f"error: --official {root}: no checkout folder {CHECKOUTS[system]!r} for {system}")
    sys.path.insert(0, str(checkout))
    common = dict(
        img_dim=args.feature_dim,
        embed_size=args.embed,
        word_dim=args.word_dim,
        vocab_size=args.vocab,
        num_layers=1,
        margin=0.2,
        max_violation=True,
        grad_clip=2.0,
        learning_rate=2e-4,
        no_imgnorm=False,
    )
    try:
        if system == "vse_inf":
            arguments = importlib.import_module("arguments")
            opt = arguments.get_argument_parser().parse_args([])
            vars(opt).update(common, learning_rate=5e-4, precomp_enc_type="basic")
            model = importlib.import_module("lib.vse").VSEModel(opt)
        elif system == "vsepp":
            opt = argparse.Namespace(
                **common,
                data_name="f30k_precomp",
                finetune=False,
                cnn_type="resnet152",
                use_abs=False,
                measure="cosine",
            )
            model = importlib.import_module("model").VSE(opt)
        else:
            module = import_patched(checkout, system, "model.py")
            extra = (
                dict(
                    precomp_enc_type="basic",
                    bi_gru=True,
                    no_txtnorm=False,
                    raw_feature_norm="clipped_l2norm",
                    cross_attn="t2i",
                    agg_func="LogSumExp",
                    lambda_lse=6.0,
                    lambda_softmax=9.0,
                )
                if system == "scan"
                else dict(bi_gru=True, no_txtnorm=False, module_name="SGR", sgr_step=3, sim_dim=256)
            )
            opt = argparse.Namespace(**common, **extra, data_name="f30k_precomp")
            model = (module.SCAN if system == "scan" else module.SGRAF)(opt)
    finally:
        sys.path.remove(str(checkout))
        for name in [m for m in sys.modules if m in ("model", "arguments") or m.startswith("lib")]:
            del sys.modules[name]  # the next checkout has modules of the same names
    if system == "vsepp":
        criterion = model.criterion
        model.criterion = lambda *a: criterion(*a).reshape(1)  # it logs `loss.data[0]`
    model.logger = _NoLog()
    model.train_start()
    return model


def official_step(system: str, model: object, batch: Batch, device: torch.device) -> Callable[[], object]:
    images, ids, image_lengths = batch.official(device, drop=system == "vse_inf")
    if system == "vse_inf":
        return lambda: model.train_emb(images, ids, batch.lengths, image_lengths=image_lengths)  # type: ignore[attr-defined]
    return lambda: model.train_emb(images, ids, batch.lengths, None)  # type: ignore[attr-defined]


def vse_ray_step(
    system: str, batch: Batch, args: argparse.Namespace, device: torch.device
) -> Callable[[], object]:
    options = {"scan": {"direction": "t2i", "aggregation": "lse"}, "sgraf": {"module": "sgr"}}.get(system, {})
    model = build_model(
        system,
        vocab_size=args.vocab,
        feature_dim=args.feature_dim,
        word_dim=args.word_dim,
        embed_dim=args.embed,
        **options,
    ).to(device)
    loss = make_loss("vsepp").to(device)
    if system == "vse_inf":  # AdamW with torch's default weight decay, as released
        optimizer: torch.optim.Optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4)
    else:
        optimizer = torch.optim.Adam(model.parameters(), lr=2e-4)
    drop = REGION_DROP if system == "vse_inf" else 0.0
    builder = BatchBuilder(ImageStore(np.arange(args.batch), batch.features), None, region_drop=drop)
    host = builder(batch.rows(), region_rng=np.random.default_rng(1))
    host = host.pin_memory() if device.type == "cuda" else host  # as the epoch loop hands it over
    model.train()
    return lambda: train_step(model, loss, optimizer, host.to(device, non_blocking=True), 2.0)


def host_profile(step: Callable[[], object], rows: int = 15) -> str:
    """The operations taking the most host (CPU) time in one step, from `torch.profiler`."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    with profile(activities=activities) as prof:
        step()
    return prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows, max_name_column_width=40)


def main() -> None:
    args = parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if device.type != "cuda":
        no_cuda()
        torch.cuda.is_available = lambda: False  # the authors' code moves to the GPU when it sees one
    stub_modules(("nltk", "tensorboard_logger", "cv2", "imageio"), only_absent=True)
    root = Path(args.official).resolve()
    name = (
        torch.cuda.get_device_name(device)
        if device.type == "cuda"
        else f"CPU, {torch.get_num_threads()} threads"
    )
    print(
        f"B={args.batch} R={args.regions} D={args.feature_dim} E={args.embed} word={args.word_dim} on {name}"
    )
    print(
        f"{'system':>8}  {'official ms':>11}  {'vse_ray ms':>10}  {'official /s':>11}  {'vse_ray /s':>10}"
        "  ratio"
    )
    results = {}
    for system in args.systems:
        batch = Batch(args, regions=system != "vsepp")
        torch.manual_seed(0)
        steps = {
            "official": synchronised(
                official_step(system, official_model(system, root, args), batch, device), device
            ),
            "vse_ray": synchronised(vse_ray_step(system, batch, args, device), device),
        }
        ms = round_robin_median_ms(steps, args.repeats, warmup=3)
        if args.profile:
            for side, step in steps.items():
                print(f"{system} {side}: one step's host time by operation")
                print(host_profile(step))
        rate = {side: 1e3 * args.batch / value for side, value in ms.items()}
        ratio = rate["vse_ray"] / rate["official"]
        flag = "" if ratio >= TARGET else f"  (under {TARGET})"
        print(
            f"{system:>8}  {ms['official']:11.1f}  {ms['vse_ray']:10.1f}  {rate['official']:11.0f}  "
            f"{rate['vse_ray']:10.0f}  {ratio:.2f}×{flag}"
        )
        results[system] = {"ms": ms, "samples_per_s": rate, "ratio": ratio}
    if args.json:
        args.json.write_text(json.dumps({"device": name, "batch": args.batch, "systems": results}, indent=1))


if __name__ == "__main__":
    main()
