"""Every stage of a recipe at a fraction of Flickr30K's or COCO's size: time, peak memory, disk, spill.

Writes a folder in the released precomp layout: `{train,dev,test}_ims.npy` float32 (N, 36, 2,048) and five
captions per image drawn at random from real captions (`--captions`, Flickr30K's dev and test captions by
default), so caption lengths and vocabulary follow real text; the training split has `--fraction` of the
paper's training images, dev and test their full size (the test protocols need it). Region features are
random (one block, each image its own rows of it, shifted by the image index): no stage's cost depends on
their values. Then, each in its own process tree, timed:

- ``write``: the precomp folder itself;
- ``precompute``: `vse-ray precompute --recipe vse_inf_lseh_f30k` (S-BERT, CIDEr and SVD relevance);
- ``loader``: one epoch of the training data path alone (store open, global shuffle, batch build with the
  loss's relevance, no model) of `vse_inf_lseh_f30k`, and the same epoch from the official in-memory
  loader (woodfrog/vse_infty's `PrecompRegionDataset` + `DataLoader`, shuffled, its collate) on the same
  files when `--official` names a checkout; their batches/s ratio, by wall and by CPU time;
- ``train_vse_inf``, ``train_sgraf``: `vse-ray train` of `vse_inf_lseh_f30k` / `sgraf_sgr_bcls_f30k` for
  `--steps` steps (`train_fraction`), validating on `--val-images` images; `--bigru` trains VSE∞ with BiGRU
  captions where bert-base-uncased's weights are not on the machine;
- ``eval``: `vse-ray evaluate` of the VSE∞ run on the test split: the full split, and for ``--like coco``
  also 5 folds of 1K and the 5K protocol, with every metric the data supports (CS@K, NCS; for ``--like
  coco`` also ECCV Caption's on the 5K, through `--coco-ids`: the k-th test image stands for the k-th of
  COCO's 5K test images and its captions for that image's captions, so the ECCV positives have their real
  count).

For each stage: wall seconds; CPU seconds, user + system of the whole process tree (on a shared machine wall
time depends on the load, CPU time much less: judge linearity on it); the peak RSS of the command's process
(driver) and of the largest other process of its tree (Ray workers, sampled every 0.2 s), all resident pages
and private (anonymous) pages alone; bytes written under
`--out`; and the bytes Ray spilled (its session folder, found by the driver's pid). One JSON line per stage
goes to `<out>/full_size.jsonl`.

    python benchmarks/full_size.py --like f30k --fraction 0.1 --out /tmp/full_size --official /tmp/vse_infty
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import threading
import time
import types
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
SIZES = {"f30k": (29000, 1014, 1000), "coco": (113287, 5000, 5000)}
REGIONS, DIM, BATCH = 36, 2048, 128
DEFAULT_CAPTIONS = [Path("/work/shared/data/f30k_dev_caps.txt"), Path("/work/shared/data/f30k_test_caps.txt")]
STAGES = ("write", "precompute", "loader", "train_vse_inf", "train_sgraf", "eval")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--like", choices=sorted(SIZES), default="f30k")
    parser.add_argument("--fraction", type=float, default=0.1, help="of the paper's training images")
    parser.add_argument("--out", required=True, help="working folder (data, runs, the JSON lines)")
    parser.add_argument("--captions", nargs="+", type=Path, default=DEFAULT_CAPTIONS, help="real captions")
    parser.add_argument(
        "--official", help="checkout of woodfrog/vse_infty (branch bigru) for the loader ratio"
    )
    parser.add_argument("--stages", nargs="+", choices=STAGES, default=list(STAGES))
    parser.add_argument("--steps", type=int, default=50, help="training steps per recipe")
    parser.add_argument("--val-images", type=int, default=100, help="validation images of the training runs")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--bigru",
        action="store_true",
        help="train VSE∞ with BiGRU captions (the recipe's BERT needs local bert-base-uncased weights)",
    )
    parser.add_argument("--loader", choices=("vse_ray", "official"), help=argparse.SUPPRESS)
    return parser.parse_args()


# ---------------------------------------------------------------------------------------------- the data


def write_precomp(folder: Path, like: str, fraction: float, caption_files: list[Path]) -> None:
    """The precomp folder (see the module docstring), written block by block, never whole in memory."""
    from vse_ray.data.precompute.vocab import build_vocab
    from vse_ray.relevance import tokenize
    from vse_ray.special_tokens import SPECIAL_TOKENS

    lines = [tokenize(line) for f in caption_files for line in f.read_text().splitlines() if line.strip()]
    if not lines:
        raise ValueError(f"{caption_files}: no captions")
    train, dev, test = SIZES[like]
    sizes = {"train": max(1, round(train * fraction)), "dev": dev, "test": test}
    rng = np.random.default_rng(0)
    block = rng.standard_normal((1024, REGIONS, DIM), dtype=np.float32)
    draw = random.Random(0)
    folder.mkdir(parents=True, exist_ok=True)
    for split, n in sizes.items():
        ims = np.lib.format.open_memmap(folder / f"{split}_ims.npy", "w+", np.float32, (n, REGIONS, DIM))
        for start in range(0, n, len(block)):
            rows = min(len(block), n - start)
            ims[start : start + rows] = block[:rows] + np.arange(start, start + rows, dtype=np.float32)[
                :, None, None
            ] * np.float32(1e-3)
        ims.flush()
        del ims
        (folder / f"{split}_caps.txt").write_text("\n".join(draw.choice(lines) for _ in range(5 * n)) + "\n")
    words = [
        w
        for w in build_vocab((folder / "train_caps.txt").read_text().splitlines())
        if w not in SPECIAL_TOKENS
    ]
    word2idx = {w: i for i, w in enumerate(("<pad>", "<start>", "<end>", "<unk>", *words))}
    vocab = {"word2idx": word2idx, "idx2word": {str(i): w for w, i in word2idx.items()}, "idx": len(word2idx)}
    (folder / "vocab.json").write_text(json.dumps(vocab))
    # the official VSE∞ loader reads <data_path>/precomp/ and <vocab_path>/f30k_precomp_vocab.json
    (folder / "precomp").mkdir(exist_ok=True)
    for file in folder.glob("*_*.*"):
        if not (folder / "precomp" / file.name).exists():
            (folder / "precomp" / file.name).symlink_to(file)
    if not (folder / "f30k_precomp_vocab.json").exists():
        (folder / "f30k_precomp_vocab.json").symlink_to(folder / "vocab.json")


# ----------------------------------------------------------------------------------------- measurement


def _rss_kb(pid: int, field: str = "VmRSS") -> int:
    """Resident kB of `pid`: all of it (``VmRSS``, which counts the pages of memory-mapped files such as a
    split's ``.npy``, reclaimable), or its private memory alone (``RssAnon``)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of `pid` itself (not its reaped children); None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime: fields 14 and 15 of proc(5)


def _name(pid: int) -> str:
    """A short name of `pid`: its command line (Ray sets its workers' titles, e.g. ``ray::MapWorker``)."""
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "?"
    text = " ".join(w.decode(errors="replace") for w in words if w)
    return (Path(text.split()[0]).name + text[len(text.split()[0]) :] if text else "?")[:60]


def _children(pid: int) -> list[int]:
    """Every descendant of `pid` (Ray's processes start from the driver)."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = Path(f"/proc/{parent}/task").iterdir()
            kids = [int(k) for t in tasks for k in (t / "children").read_text().split()]
        except OSError:
            kids = []
        found += kids
        todo += kids
    return found


def _du(path: Path) -> int:
    """Bytes of the files under `path`."""
    if not path.exists():
        return 0
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def measure(cmd: list[str], out: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run `cmd`; its wall time, CPU time, peak RSS of the driver and of the largest other process, disk,
    spill.

    CPU time is user + system seconds of the whole process tree: each process's own time as last sampled
    (every 0.2 s, so a process loses at most its last 0.2 s), and at least what the kernel counts for the
    command and the descendants it reaped (`getrusage(RUSAGE_CHILDREN)`); Ray's workers are descendants of the
    driver. ``cpu_top`` names the processes that used the most."""
    before = _du(out)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.time()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peaks: dict[int, int] = {}
    anon: dict[int, int] = {}
    cpu: dict[int, float] = {}
    names: dict[int, str] = {}
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.2):
            for pid in [proc.pid, *_children(proc.pid)]:
                peaks[pid] = max(peaks.get(pid, 0), _rss_kb(pid))
                anon[pid] = max(anon.get(pid, 0), _rss_kb(pid, "RssAnon"))
                seconds = _cpu_s(pid)
                if seconds is not None:
                    cpu[pid] = seconds
                name = _name(pid)
                if pid not in names or name not in ("?", "ray::IDLE"):
                    names[pid] = name  # a Ray worker's title names its task, and turns IDLE after it

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    text, _ = proc.communicate()
    stop.set()
    sampler.join()
    wall = time.time() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} ... failed (rc {proc.returncode}):\n{text[-3000:]}")
    spill = sum(_du(s / "ray_spilled_objects") for s in Path("/tmp/ray").glob(f"session_*_{proc.pid}"))
    others = [kb for pid, kb in peaks.items() if pid != proc.pid]
    now = resource.getrusage(resource.RUSAGE_CHILDREN)
    kernel = now.ru_utime + now.ru_stime - reaped.ru_utime - reaped.ru_stime
    top = sorted(cpu, key=cpu.__getitem__, reverse=True)[:4]
    return {
        "wall_s": wall,
        "cpu_s": max(sum(cpu.values()), kernel),
        "cpu_top": {f"{pid} {names.get(pid, '?')}": round(cpu[pid], 1) for pid in top},
        "driver_peak_gb": peaks.get(proc.pid, 0) / 1e6,
        "worker_peak_gb": max(others, default=0) / 1e6,
        "driver_anon_peak_gb": anon.get(proc.pid, 0) / 1e6,
        "worker_anon_peak_gb": max((kb for pid, kb in anon.items() if pid != proc.pid), default=0) / 1e6,
        "processes": len(peaks),
        "disk_gb": (_du(out) - before) / 1e9,
        "spill_gb": spill / 1e9,
        "output": text[-2000:],
    }


# --------------------------------------------------------------------------------- the loader epochs


def loader_epoch(kind: str, data: Path, store: Path, official: str | None) -> None:
    """In its own process: one shuffled epoch of training batches; prints batches, seconds, batches/s."""
    import torch

    if kind == "official":
        sys.path.insert(0, str(official))
        for name in ("imageio", "cv2"):  # imported by the module, used for raw images only
            stub = types.ModuleType(name)
            stub.imread = lambda *a, **k: None  # type: ignore[attr-defined]
            sys.modules[name] = stub
        import nltk

        nltk.tokenize.word_tokenize = str.split  # as bench_vs_official.py: whitespace tokens
        from lib.datasets import image_caption
        from lib.vocab import deserialize_vocab

        vocab = deserialize_vocab(str(data / "f30k_precomp_vocab.json"))
        vocab.add_word("<mask>")
        opt = argparse.Namespace(precomp_enc_type="basic", drop=True, data_path=str(data))
        start, cpu = time.perf_counter(), time.process_time()
        loader = image_caption.get_loader(
            str(data), "precomp", "train", vocab, opt, BATCH, True, 0, train=True
        )
        batches = sum(1 for _ in loader)
    else:
        from vse_ray.losses import make_loss
        from vse_ray.models import build_model
        from vse_ray.train.batches import BatchBuilder, TableBatches
        from vse_ray.train.recipe import load_recipe
        from vse_ray.train.streams import caption_rng, region_rng
        from vse_ray.train.training_data import TrainingData

        # BiGRU captions: the recipe's BERT text encoder needs weights that nothing here downloads
        cfg = load_recipe("vse_inf_lseh_f30k", str(store), ["model_params.text_encoder=bigru"]).config
        source = make_loss(cfg.loss, **cfg.loss_params).relevance_source
        start, cpu = time.perf_counter(), time.process_time()
        data_ = TrainingData.load(cfg, source)
        model = build_model(cfg.model, **data_.model_args)
        builder = BatchBuilder(
            data_.train_images, source, data_.references, model.caption_ids, model.region_drop
        )
        augment = data_.caption_augment
        rng, regions = caption_rng(cfg.seed, 0, 1), region_rng(cfg.seed, 0, 1)
        draw = (lambda ids: augment(ids, rng=rng)) if augment is not None else None
        batches = 0
        for rows in TableBatches(data_.train_captions, cfg.batch_size, cfg.seed).epoch_batches(1):
            builder(rows, None, draw, regions)
            batches += 1
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    print(
        json.dumps(
            {
                "batches": batches,
                "seconds": seconds,
                "batches_per_s": batches / seconds,
                "cpu_seconds": cpu_seconds,  # the process's CPU time: the loaders run in-process
                "batches_per_cpu_s": batches / cpu_seconds,
                "torch": torch.__version__,
            }
        )
    )


# ------------------------------------------------------------------------------------------------ main


def main() -> None:
    args = parse_args()
    out = Path(args.out).resolve()
    data, store = out / f"{args.like}_{args.fraction}_precomp", out / f"{args.like}_{args.fraction}_vse_ray"
    if args.loader:
        loader_epoch(args.loader, data, store, args.official)
        return
    out.mkdir(parents=True, exist_ok=True)
    threads = str(args.threads)
    env = {**os.environ, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # this env's vse-ray
    runs = out / "runs"
    log = out / "full_size.jsonl"
    me = [sys.executable, __file__, "--like", args.like, "--fraction", str(args.fraction), "--out", str(out)]
    train_captions = 5 * max(1, round(SIZES[args.like][0] * args.fraction))
    train_fraction = min(1.0, (args.steps + 0.5) * BATCH / train_captions)
    train_common = [
        *("--data", str(store), "--epochs", "1", "--set", f"train_fraction={train_fraction:.6f}"),
        *("--set", f"val_images={args.val_images}", "--cpus-per-worker", threads, "--output-dir", str(runs)),
    ]
    commands: dict[str, list[str]] = {
        "precompute": [
            *("vse-ray", "precompute", "--recipe", "vse_inf_lseh_f30k", "--dataset", "precomp"),
            *("--precomp-dir", str(data), "--vocab", str(data / "vocab.json"), "--out", str(store)),
        ],
        "train_vse_inf": [
            "vse-ray",
            "train",
            "--recipe",
            _recipe(out, "vse_inf_lseh_f30k", data / "vocab.json", bigru=args.bigru),
            *train_common,
            "--run-name",
            "fs_vse_inf",
        ],
        "train_sgraf": [
            "vse-ray",
            "train",
            "--recipe",
            _recipe(out, "sgraf_sgr_bcls_f30k", data / "vocab.json"),
            *train_common,
            "--run-name",
            "fs_sgraf",
        ],
    }
    for stage in args.stages:
        row: dict[str, Any] = {
            "like": args.like,
            "fraction": args.fraction,
            "stage": stage,
            "load": os.getloadavg()[0],
        }
        if stage == "write":
            before, start, cpu = _du(out), time.time(), time.process_time()
            write_precomp(data, args.like, args.fraction, args.captions)
            row.update(
                wall_s=time.time() - start,
                cpu_s=time.process_time() - cpu,
                driver_peak_gb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
                disk_gb=(_du(out) - before) / 1e9,
            )
        elif stage == "loader":
            ours = measure([*me, "--loader", "vse_ray"], out, env)
            row.update({k: v for k, v in ours.items() if k != "output"})
            row["vse_ray"] = json.loads(ours["output"].strip().splitlines()[-1])
            if args.official:
                theirs = measure([*me, "--loader", "official", "--official", args.official], out, env)
                row["official"] = json.loads(theirs["output"].strip().splitlines()[-1])
                row["official"]["peak_gb"] = theirs["driver_peak_gb"]
                row["official"]["cpu_s"] = theirs["cpu_s"]
                row["ratio"] = row["vse_ray"]["batches_per_s"] / row["official"]["batches_per_s"]
                row["ratio_cpu"] = row["vse_ray"]["batches_per_cpu_s"] / row["official"]["batches_per_cpu_s"]
        elif stage == "eval":
            protocols = ["full"] + (["coco1k", "coco5k"] if args.like == "coco" else [])
            eccv = ["--coco-ids", coco_ids_file(store, out)] if args.like == "coco" else []
            for protocol in protocols:
                cmd = [
                    *(
                        "vse-ray",
                        "evaluate",
                        "--run",
                        _run_checkpoint(runs, "fs_vse_inf"),
                        "--data",
                        str(store),
                    ),
                    *("--split", "test", "--protocol", protocol, "--output-dir", str(runs)),
                    *(eccv if protocol != "coco1k" else []),  # ECCV Caption is defined on the 5K
                ]
                result = measure(cmd, out, env)
                row[protocol] = {k: v for k, v in result.items() if k != "output"}
                row[protocol]["tail"] = result["output"][-600:]
        else:
            result = measure(commands[stage], out, env)
            row.update({k: v for k, v in result.items() if k != "output"})
            row["tail"] = result["output"][-600:]
        row["load_after"] = os.getloadavg()[0]
        print(json.dumps(row), flush=True)
        with log.open("a") as file:
            file.write(json.dumps(row) + "\n")


def _recipe(out: Path, base: str, vocab: Path, bigru: bool = False) -> str:
    """A recipe file over `base` that names the vocabulary the store was built with (the recipe/data check
    asks for it); with `bigru`, BiGRU captions and no BERT learning-rate group."""
    path = out / f"{base}{'_bigru' if bigru else ''}.yaml"
    train = "train:\n  model_params: {text_encoder: bigru}\n  lr_groups: null\n" if bigru else ""
    path.write_text(f"base: {base}\nprecompute: {{vocab_file: {vocab}}}\n{train}")
    return str(path)


def coco_ids_file(store: Path, out: Path) -> str:
    """`<out>/coco_ids.json` for `evaluate --coco-ids`: the test split's images in id order as COCO's 5K test
    images in id order (eccv_caption's lists), each image's captions as that image's COCO captions."""
    import eccv_caption

    from vse_ray.data.store.readers import load_captions, read_features_table

    gts = Path(eccv_caption.__file__).parent / "data" / "original_image_to_caption.json"
    coco = {int(k): v for k, v in json.loads(gts.read_text()).items()}
    ours = np.sort(read_features_table(str(store), "test", ["image_id"])["image_id"].to_numpy())
    captions = load_captions(str(store), "test", ["caption_id", "image_id"])
    mapping: dict[str, dict[str, int]] = {"images": {}, "captions": {}}
    cap_ids, cap_images = captions["caption_id"].to_numpy(), captions["image_id"].to_numpy()
    for image_id, coco_image in zip(ours.tolist(), sorted(coco), strict=False):
        mapping["images"][str(image_id)] = coco_image
        mine = cap_ids[cap_images == image_id]
        mapping["captions"].update(
            {str(c): int(k) for c, k in zip(mine.tolist(), sorted(coco[coco_image]), strict=False)}
        )
    path = out / "coco_ids.json"
    path.write_text(json.dumps(mapping))
    return str(path)


def _run_checkpoint(runs: Path, run_name: str) -> str:
    """The newest checkpoint folder of `run_name` under `runs` (what `vse-ray evaluate --run` accepts)."""
    found = sorted((p for p in runs.rglob("checkpoint_*") if p.is_dir()), key=lambda p: p.stat().st_mtime)
    found = [p for p in found if run_name in str(p)] or found
    if not found:
        raise ValueError(f"{runs}: no checkpoint of run {run_name}; run the train_vse_inf stage first")
    return str(found[-1])


if __name__ == "__main__":
    main()
