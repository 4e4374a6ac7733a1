"""Training speed of `vse-ray train` against the authors' training code, same data, settings and threads.

For each system, the official `train.py` (its own `main`, from a checkout under `--official-root`) and
`vse-ray train` (the command, with Ray, MLflow and checkpoints) train the same number of epochs on the same
precomp files: a synthetic region dataset of `--fraction` of Flickr30K's size (`make_region_dataset.py`,
36 x 2,048 float32 regions; VSE++ reads their mean, a pooled (N, 2,048) feature), batch 128, with
`OMP_NUM_THREADS=--threads` on both sides and one Ray Train worker of `--threads` CPUs.

Systems and their checkouts (`--official-root/<folder>`), patched at run time only (nothing of them is copied
here; the patches change no arithmetic):

- ``vse_inf``: woodfrog/vse_infty, branch ``bigru`` (folder ``vse_infty``), the released settings of
  `recipes/vse_inf_bigru_f30k.yaml` (AdamW, caption augmentation, region drop, one VSE0 warm-up epoch);
  the patches are those of `official_vse_inf.py` (stub logging modules, `.cuda()` a no-op, whitespace
  tokens, the dev split's real length);
- ``vsepp``: fartashf/vsepp (folder ``vsepp``), precomputed features, `--max_violation`, lr 2e-4; Python 2
  idioms are shimmed (integer division of the image index, bytes captions, `iteritems`, a one-element loss
  for `loss.data[0]`, integer `npts`), the vocabulary pickle is built from the dataset's `vocab.json`.

Both sides are timed by the same wrappers (`timing_hook/sitecustomize.py`): every step, validation,
checkpoint, data open and (vse_ray) batch build and report is one event. The report gives:

- steady-state training samples/s: 128 x the steps counted / the time between their starts (data and step),
  within each epoch, leaving out each epoch's first `--skip` steps;
- the one-off costs: start (process, imports, and for vse_ray Ray, MLflow and the worker, up to the data
  open), data open, set-up (model and optimiser), validation, checkpoint, report (vse_ray: epoch metrics to
  MLflow and Ray Train's checkpoint copy), and the end (after the last event to the process's exit);
- the end-to-end wall time of each command and the ratio official / vse_ray (≥ 1: vse_ray is as fast).

    python benchmarks/bench_vs_official.py --official-root /tmp/official --out /tmp/bench_vs \\
        --systems vse_inf vsepp --fraction 0.1 --epochs 2 --threads 1
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import time
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
HOOK = HERE / "timing_hook"
F30K_IMAGES = (29000, 1014, 1000)  # train, dev, test
CHECKOUTS = {"vse_inf": "vse_infty", "vsepp": "vsepp"}
BATCH = 128


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--official-root", help="folder of the checkouts (vse_infty on branch bigru, vsepp)")
    parser.add_argument("--out", required=True, help="working and report folder")
    parser.add_argument("--systems", nargs="+", choices=sorted(CHECKOUTS), default=["vse_inf", "vsepp"])
    parser.add_argument("--fraction", type=float, default=0.1, help="of Flickr30K's images")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="torch threads on each side")
    parser.add_argument("--official-workers", type=int, default=0, help="official DataLoader workers")
    parser.add_argument("--skip", type=int, default=3, help="first steps of each epoch not counted")
    parser.add_argument(
        "--together",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run both sides at the same time, so they share whatever else loads the machine",
    )
    parser.add_argument(
        "--sides", nargs="+", choices=("official", "vse_ray"), default=["official", "vse_ray"]
    )
    parser.add_argument("--role", choices=("official",), help=argparse.SUPPRESS)  # the official run's process
    parser.add_argument("--system", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    return parser.parse_args()


# ---------------------------------------------------------------------------------------------------- data


def make_data(out: Path, fraction: float, systems: list[str]) -> dict[str, Path]:
    """The region folder, the pooled folder, the two layouts the official codes read, and vse_ray's data
    folders of `systems` (all cached)."""
    regions = out / f"regions_{fraction}"
    if not (regions / "vocab.json").exists():
        sizes = [str(max(1, round(n * fraction))) for n in F30K_IMAGES]
        maker = [sys.executable, str(HERE / "make_region_dataset.py"), "--out", str(regions)]
        subprocess.run([*maker, "--sizes", *sizes, "--dim", "2048"], check=True)
    pooled = out / f"pooled_{fraction}"
    pooled.mkdir(exist_ok=True)
    for split in ("train", "dev", "test"):
        if not (pooled / f"{split}_ims.npy").exists():
            ims = np.load(regions / f"{split}_ims.npy", mmap_mode="r")
            np.save(pooled / f"{split}_ims.npy", np.asarray(ims).mean(axis=1, dtype=np.float32))
        _link(pooled / f"{split}_caps.txt", regions / f"{split}_caps.txt")
    _link(pooled / "vocab.json", regions / "vocab.json")
    # vse_infty reads <data_path>/precomp/ and <vocab_path>/f30k_precomp_vocab.json
    vse_inf = out / f"official_vse_inf_{fraction}"
    (vse_inf / "precomp").mkdir(parents=True, exist_ok=True)
    for file in regions.iterdir():
        _link(vse_inf / "precomp" / file.name, file)
    _link(vse_inf / "f30k_precomp_vocab.json", regions / "vocab.json")
    # vsepp reads <data_path>/f30k_precomp/ (pooled)
    vsepp = out / f"official_vsepp_{fraction}"
    (vsepp / "f30k_precomp").mkdir(parents=True, exist_ok=True)
    for file in pooled.iterdir():
        _link(vsepp / "f30k_precomp" / file.name, file.resolve())
    stores = {}
    for name, folder, system in (("regions", regions, "vse_inf"), ("pooled", pooled, "vsepp")):
        store = out / f"vse_ray_{name}_{fraction}"
        if system in systems and not (store / "manifest.json").exists():
            subprocess.run(
                [
                    *("vse-ray", "precompute", "--dataset", "precomp", "--precomp-dir", str(folder)),
                    *("--vocab", str(folder / "vocab.json"), "--relevance", "svd"),
                    *("--feature-dtype", "float32", "--out", str(store)),
                ],
                check=True,
            )
        stores[name] = store
    return {
        "vse_inf": vse_inf,
        "vsepp": vsepp,
        "store_vse_inf": stores["regions"],
        "store_vsepp": stores["pooled"],
    }


def _link(link: Path, target: Path) -> None:
    if not link.exists():
        link.symlink_to(target)


# --------------------------------------------------------------------------------------- the official side


def official_argv(system: str, data: Path, run: Path, args: argparse.Namespace) -> list[str]:
    """The official `train.py` command line for `system` (released settings, see the module docstring)."""
    common = [
        *("--batch_size", str(BATCH), "--num_epochs", str(args.epochs), "--margin", "0.2"),
        *("--word_dim", "300", "--embed_size", "1024", "--grad_clip", "2", "--lr_update", "15"),
        *("--workers", str(args.official_workers), "--logger_name", str(run / "log")),
    ]
    if system == "vse_inf":
        return [
            *common,
            *("--data_path", str(data), "--data_name", "precomp", "--vocab_path", str(data)),
            *("--learning_rate", "5e-4", "--vse_mean_warmup_epochs", "1", "--model_name", str(run / "ckpt")),
        ]
    return [
        *common,
        *("--data_path", str(data), "--data_name", "f30k_precomp", "--vocab_path", str(run)),
        *("--learning_rate", "2e-4", "--max_violation", "--img_dim", "2048"),
    ]


def run_official(args: argparse.Namespace) -> None:
    """In the official run's process: patch the checkout's modules, wrap them with timers, run its `main`."""
    sys.path.insert(0, str(HOOK))
    from sitecustomize import timed  # the same event writer as vse_ray's side

    checkout = Path(args.official_root) / CHECKOUTS[args.system]
    sys.path.insert(0, str(checkout))
    for name in ("tensorboard_logger", "imageio", "cv2"):
        stub = types.ModuleType(name)
        stub.configure = stub.log_value = stub.imread = lambda *a, **k: None  # type: ignore[attr-defined]
        sys.modules[name] = stub
    import nltk
    import torch

    nltk.tokenize.word_tokenize = str.split  # the captions are lower-case words without punctuation
    torch.Tensor.cuda = lambda self, *a, **k: self  # type: ignore[method-assign]
    run = Path(args.out)
    (run / "log").mkdir(parents=True, exist_ok=True)  # tensorboard_logger would make it
    sys.argv = ["train.py", *official_argv(args.system, Path(args.data), run, args)]
    if args.system == "vse_inf":
        import train
        from lib import vse
        from lib.datasets import image_caption as data

        dataset = data.PrecompRegionDataset
        model_class = vse.VSEModel
    else:
        import data
        import evaluation
        import model
        import train

        _shim_vsepp(data, evaluation, model, train, run)
        dataset = data.PrecompDataset
        model_class = model.VSE
    init = dataset.__init__

    def real_length(self: Any, *a: Any, **k: Any) -> None:  # the dev split's fixed 5,000 is its real length
        init(self, *a, **k)
        self.length = len(self.captions)

    dataset.__init__ = real_length
    collate = data.collate_fn

    def listed_ids(batch: Any) -> tuple:  # NumPy 2 reads a tuple index as one index per axis
        *rest, ids = collate(batch)
        return (*rest, list(ids))

    data.collate_fn = listed_ids
    data.get_loaders = timed("data_open", data.get_loaders)
    train.validate = timed("validate", train.validate)
    train.save_checkpoint = timed("checkpoint", train.save_checkpoint)
    model_class.train_emb = timed("step", model_class.train_emb)
    train.main()


class _FloorBy(int):
    """`index / im_div` of Python 2: an image index, not a float."""

    def __rtruediv__(self, other: int) -> int:
        return other // int(self)


def _shim_vsepp(data: Any, evaluation: Any, model: Any, train: Any, run: Path) -> None:
    """Python 2 idioms of fartashf/vsepp, shimmed so Python 3 runs the same arithmetic."""
    import collections

    import vocab as vocab_module

    words = json.loads(
        (Path(sys.argv[sys.argv.index("--data_path") + 1]) / "f30k_precomp/vocab.json").read_text()
    )
    vocab = vocab_module.Vocabulary()
    for index in sorted(words["idx2word"], key=int):
        vocab.add_word(words["idx2word"][index])
    with open(run / "f30k_precomp_vocab.pkl", "wb") as file:
        pickle.dump(vocab, file)
    data.str = lambda caption: caption  # `str(caption).lower().decode('utf-8')` of a bytes line
    init = data.PrecompDataset.__init__

    def floor_index(self: Any, *a: Any, **k: Any) -> None:
        init(self, *a, **k)
        self.im_div = _FloorBy(self.im_div)

    data.PrecompDataset.__init__ = floor_index
    evaluation.OrderedDict = type(
        "OrderedDict", (collections.OrderedDict,), {"iteritems": collections.OrderedDict.items}
    )
    loss_forward = model.ContrastiveLoss.forward
    model.ContrastiveLoss.forward = lambda self, *a: loss_forward(self, *a).reshape(1)  # `loss.data[0]`
    for name in ("i2t", "t2i"):
        ranker = getattr(train, name)
        setattr(train, name, lambda ims, caps, _f=ranker, **k: _f(ims, caps, npts=ims.shape[0] // 5, **k))


# ------------------------------------------------------------------------------------------- running both


def vse_ray_argv(system: str, store: Path, run: Path, args: argparse.Namespace) -> list[str]:
    """`vse-ray train` with the settings of `official_argv`."""
    common = [
        *("train", "--data", str(store), "--epochs", str(args.epochs), "--batch-size", str(BATCH)),
        *("--cpus-per-worker", str(args.threads), "--output-dir", str(run)),
    ]
    if system == "vse_inf":
        # the training settings of recipes/vse_inf_bigru_f30k.yaml (the recipe itself asks for float16 data)
        sets = (
            "model_params.text_encoder=bigru model_params.region_drop=0.2 optimizer=adamw weight_decay=0.01 "
            "warmup_loss=vse0 warmup_params.margin=0.2 "
            "caption_mask=0.1 caption_replace=0.02 caption_delete=0.08"
        )
        return [
            *common,
            *(
                "--model",
                "vse_inf",
                "--loss",
                "vsepp",
                "--param",
                "margin=0.2",
                "--lr",
                "5e-4",
                "--lr-update",
                "15",
            ),
            *("--grad-clip", "2", "--word-dim", "300", "--embed-dim", "1024", "--warmup-epochs", "1"),
            *("--negatives", "diagonal"),
            *(arg for item in sets.split() for arg in ("--set", item)),
        ]
    return [
        *common,
        *(
            "--model",
            "vsepp",
            "--loss",
            "vsepp",
            "--param",
            "margin=0.2",
            "--lr",
            "2e-4",
            "--lr-update",
            "15",
        ),
        *("--grad-clip", "2", "--word-dim", "300", "--embed-dim", "1024", "--warmup-epochs", "0"),
        *("--negatives", "diagonal"),
    ]


def timed_run(side: str, system: str, paths: dict[str, Path], out: Path, args: argparse.Namespace) -> dict:
    """One side's run of `system`: its events, wall time, and the load average around it."""
    run = out / "runs" / f"{system}_{side}_{time.strftime('%H%M%S')}"
    run.mkdir(parents=True)
    events = run / "events.jsonl"
    threads = str(args.threads)
    env = {**os.environ, "BENCH_EVENTS": str(events), "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HOOK), os.environ.get("PYTHONPATH", "")) if p)
    if side == "official":
        cmd = [
            *(sys.executable, __file__, "--role", "official", "--system", system, "--out", str(run)),
            *(
                "--official-root",
                args.official_root,
                "--data",
                str(paths[system]),
                "--epochs",
                str(args.epochs),
            ),
            *("--official-workers", str(args.official_workers)),
        ]
    else:
        cmd = ["vse-ray", *vse_ray_argv(system, paths[f"store_{system}"], run, args)]
    load = os.getloadavg()[0]
    start = time.time()
    done = subprocess.run(cmd, env=env, cwd=run, capture_output=True, text=True)
    end = time.time()
    (run / "stdout.txt").write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise RuntimeError(f"{system} {side} failed (rc {done.returncode}), see {run / 'stdout.txt'}")
    recorded = [json.loads(line) for line in events.read_text().splitlines()]
    record = {"start": start, "end": end, "events": recorded, "load": [load, os.getloadavg()[0]]}
    (run / "record.json").write_text(json.dumps(record))
    return record


def step_epochs(record: dict) -> list[list[dict]]:
    """The step events of one run, per epoch (validation events separate the epochs)."""
    steps = sorted((e for e in record["events"] if e["name"] == "step"), key=lambda e: e["t0"])
    cuts = [e["t0"] for e in record["events"] if e["name"] == "validate"]
    epochs: list[list[dict]] = [[] for _ in range(len(cuts) + 1)]
    for step in steps:
        epochs[sum(step["t0"] > c for c in cuts)].append(step)
    return epochs


def steady_rate(record: dict, skip: int, window: tuple[float, float] = (0.0, float("inf"))) -> float:
    """Samples/s over the intervals between consecutive step starts of an epoch, leaving out each epoch's
    first `skip` steps, counting only intervals inside `window` (wall-clock seconds)."""
    counted, seconds = 0, 0.0
    for epoch in step_epochs(record):
        starts = [s["t0"] for s in epoch][skip:]
        for a, b in zip(starts, starts[1:], strict=False):
            if window[0] <= a and b <= window[1]:
                counted, seconds = counted + 1, seconds + b - a
    return BATCH * counted / seconds if counted else float("nan")


def summarise(record: dict, skip: int) -> dict[str, Any]:
    """Steady-state samples/s and the one-off costs of one run (see the module docstring)."""
    events = sorted(record["events"], key=lambda e: e["t0"])
    by = lambda name: [e for e in events if e["name"] == name]  # noqa: E731
    steps, epochs = by("step"), step_epochs(record)
    rate = steady_rate(record, skip)
    spent = lambda name: sum(e["t1"] - e["t0"] for e in by(name))  # noqa: E731
    first_open = by("data_open")[0]
    train = sum(epoch[-1]["t1"] - epoch[0]["t0"] for epoch in epochs if epoch)
    row = {
        "samples_per_s": rate,
        "step_s": BATCH / rate,
        "batch_s": spent("batch") / max(len(by("batch")), 1),
        "steps": len(steps),
        "threads": sorted({e["threads"] for e in steps}),
        "total_s": record["end"] - record["start"],
        "start_s": first_open["t0"] - record["start"],
        "data_open_s": spent("data_open"),
        "setup_s": steps[0]["t0"] - first_open["t1"],
        "train_s": train,
        "validate_s": spent("validate"),
        "checkpoint_s": spent("checkpoint"),
        "report_s": spent("report"),
        "end_s": record["end"] - max(e["t1"] for e in events),
        "load": record["load"],
    }
    row["other_s"] = row["total_s"] - sum(
        row[k] for k in ("start_s", "data_open_s", "setup_s", "train_s", "end_s")
    )
    return row


def table(results: dict[str, dict[str, dict]]) -> str:
    """The Markdown report: per system, each side's rate and costs, and the ratios."""
    keys = ("start_s", "data_open_s", "setup_s", "validate_s", "checkpoint_s", "report_s", "end_s", "total_s")
    lines = [
        "| system | side | samples/s | step s | " + " | ".join(k[:-2] for k in keys) + " | load |",
        "|---|---|---:|---:|" + "---:|" * len(keys) + "---|",
    ]
    ratios = []
    for system, sides in results.items():
        for side, row in sides.items():
            costs = " | ".join(f"{row[k]:.1f}" for k in keys)
            load = "→".join(f"{x:.1f}" for x in row["load"])
            lines.append(
                f"| {system} | {side} | {row['samples_per_s']:.1f} | {row['step_s']:.3f} | {costs} | {load} |"
            )
        if set(sides) == {"official", "vse_ray"}:
            o, v = sides["official"], sides["vse_ray"]
            rate = v["samples_per_s"] / o["samples_per_s"]
            overlap = v.get("overlap_samples_per_s", float("nan")) / o.get(
                "overlap_samples_per_s", float("nan")
            )
            ratios.append(
                f"- {system}: samples/s vse_ray ÷ official **{rate:.2f}×** "
                f"(while both stepped: {overlap:.2f}×); "
                f"end to end official ÷ vse_ray **{o['total_s'] / v['total_s']:.2f}×** "
                f"({o['total_s']:.1f} s against {v['total_s']:.1f} s)"
            )
    return "\n".join([*lines, "", *ratios]) + "\n"


def main() -> None:
    args = parse_args()
    if args.role == "official":
        run_official(args)
        return
    if not args.official_root:
        raise SystemExit("--official-root: the folder of the official checkouts is required")
    for system in args.systems:
        checkout = Path(args.official_root) / CHECKOUTS[system] / "train.py"
        if "official" in args.sides and not checkout.exists():
            raise SystemExit(f"{checkout}: not found (a checkout of {system}'s official code)")
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    paths = make_data(out, args.fraction, args.systems)
    results: dict[str, dict[str, dict]] = {}
    for system in args.systems:
        with ThreadPoolExecutor(len(args.sides) if args.together else 1) as pool:
            runs = [pool.submit(timed_run, side, system, paths, out, args) for side in args.sides]
            records = [run.result() for run in runs]
        results[system] = {side: summarise(r, args.skip) for side, r in zip(args.sides, records, strict=True)}
        if len(records) == 2:  # the rates while both sides were stepping, under the same load
            spans = [
                (min(s["t0"] for s in steps), max(s["t1"] for s in steps))
                for steps in ([e for e in r["events"] if e["name"] == "step"] for r in records)
            ]
            window = (max(a for a, _ in spans), min(b for _, b in spans))
            for side, record in zip(args.sides, records, strict=True):
                results[system][side]["overlap_samples_per_s"] = steady_rate(record, args.skip, window)
        for side, row in results[system].items():
            print(system, side, json.dumps(row), flush=True)
    text = table(results)
    stamp = time.strftime("%Y%m%d_%H%M%S")
    (out / f"bench_vs_official_{stamp}.md").write_text(text)
    (out / f"bench_vs_official_{stamp}.json").write_text(json.dumps(results, indent=1))
    print(text)


if __name__ == "__main__":
    main()
