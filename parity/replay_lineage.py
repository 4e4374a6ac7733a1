"""Replay an official VSE++, SCAN, SGRAF or VSRN run's batches through vse_ray: with the same start and the
same batches, does vse_ray's run land where the official run lands, and what does the official last, smaller
batch change?

`run_parity.py --system vsepp|scan|sgr|vsrn` compares the two codes over seeds, each with its own batch draws.
This removes the draws for one seed of its setting:

1. the official run (`official_lineage.py`'s `build`, seeded, its own loop and validation), recording the
   caption indices of every training batch (its loader keeps each epoch's last, smaller batch);
2. vse_ray's `run_training` for the same seed (the same initial weights: `test_initial_weights.py`),
   fed those batches in that order (`--last keep`), or without each epoch's last, smaller batch as vse_ray's
   own loader does (`--last drop`), or both (the default).

It prints one JSON line and writes `<out>/<system>_s<seed>_replay.json`: each run's validation rsum per epoch
and test rsum, and vse_ray's own run of the seed from `run_parity.py`'s cache when given (`--own`). What is
left between the official run and a replay with its last batches is the two codes' arithmetic, which step
parity bounds at rounding, grown by a chaotic run; between the two replays, the last batch alone.

    python parity/replay_lineage.py --system scan --official ~/src/SCAN --out runs/parity --dataset objects \\
        --regions 12 --embed-dim 128 --epochs 4 --seed 0
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from official_lineage import IDS_AT, build, final_test_rsum, train_epoch
from run_parity import LINEAGE, make_data, official_command, train_and_test, vse_ray_config
from run_parity import parse_args as parity_args

from vse_ray.data.store.readers import load_captions
from vse_ray.train.batches import train_columns
from vse_ray.train.epoch_loop import WorkerContext

# GSMN's vse_ray folder is made by `gsmn-data` (boxes, graphs), which `official_vocab_store` does not remake
REPLAYABLE = ("vsepp", "scan", "sgr", "vsrn")


def parse_args() -> tuple[argparse.Namespace, argparse.Namespace]:
    """This script's options, and `run_parity.py`'s namespace for the same setting."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--last", choices=("keep", "drop", "both"), default="both")
    parser.add_argument("--own", action="store_true", help="add vse_ray's own run of the seed (cached)")
    parser.add_argument(
        "--rounding", action="store_true",
        help="also the official run from its start times (1 + 1e-7·N(0, 1)): what rounding alone moves",
    )  # fmt: skip
    ours, rest = parser.parse_known_args()
    sys.argv = [sys.argv[0], *rest]
    parity = parity_args()
    if parity.system not in REPLAYABLE:
        parser.error(f"--system {parity.system}: one of {', '.join(REPLAYABLE)}")
    return ours, parity


class Recorded:
    """The official training loader, recording each batch's caption indices (its field `ids_at`)."""

    def __init__(self, loader: Any, ids_at: int) -> None:
        self.loader, self.ids_at, self.epochs = loader, ids_at, []  # type: ignore[var-annotated]

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self) -> Iterator[Any]:
        self.epochs.append([])
        for batch in self.loader:
            self.epochs[-1].append(np.asarray(batch[self.ids_at], dtype=np.int64))
            yield batch


def official_run(
    args: argparse.Namespace, parity: argparse.Namespace, data: Path, rounding: bool = False
) -> dict[str, Any]:
    """The official run of `args.seed`, with its batches (`ids`: per epoch, per step); `rounding`: from its
    start with every weight times (1 + 1e-7·N(0, 1)), drawn from a generator of its own."""
    command = official_command(data, args.seed, parity)
    options = command[command.index("--") + 1 :]
    lineage = argparse.Namespace(
        system=LINEAGE[parity.system], official=parity.official, data=str(data), seed=args.seed, weights=None,
        weights_vocab=None, options=options,
    )  # fmt: skip
    run = build(lineage)
    if rounding:
        draw = torch.Generator().manual_seed(args.seed)
        with torch.no_grad():
            for weight in run.model.params:
                weight.mul_(1 + 1e-7 * torch.randn(weight.shape, generator=draw))
    run.train_loader = recorded = Recorded(run.train_loader, IDS_AT.get(lineage.system, -1))
    val = [train_epoch(run, epoch) for epoch in range(run.opt.num_epochs)]
    return {"val_rsum": val, "test_rsum": final_test_rsum(run), "ids": recorded.epochs}


class OfficialBatches:
    """vse_ray's caption rows in the official run's batches (official caption index = line of
    `train_caps.txt` = row of vse_ray's train split, checked by text); `drop`: without batches smaller than
    the first."""

    def __init__(self, columns: dict[str, np.ndarray], ids: list[list[np.ndarray]], drop: bool) -> None:
        self.columns, self.ids, self.drop = columns, ids, drop

    def epoch_batches(self, epoch: int) -> Iterator[dict[str, Any]]:
        size = len(self.ids[0][0])
        for rows in self.ids[epoch - 1]:
            if self.drop and len(rows) < size:
                continue
            yield {name: column[rows] for name, column in self.columns.items()}


def replay(config: dict, ids: list[list[np.ndarray]], drop: bool, caps: Path) -> dict[str, Any]:
    """vse_ray's run of `config` fed the official batches."""
    data_dir = config["data_dir"]
    table = load_captions(data_dir, "train", train_columns(None))
    texts = caps.read_text().splitlines()
    if table.num_rows != len(texts) or table["text"].to_pylist() != [t.strip() for t in texts]:
        raise SystemExit(f"error: {data_dir}: its train captions are not {caps}, line for line")
    columns = {name: table[name].to_numpy(zero_copy_only=False) for name in table.column_names}
    batches = WorkerContext(OfficialBatches(columns, ids, drop), torch.device("cpu"))
    record, _ = train_and_test(config, batches)
    return {key: record[key] for key in ("val_rsum", "test_rsum")}


def official_vocab_store(official: Path, store: Path) -> Path:
    """`store` precomputed again with the official vocabulary file (`precompute --vocab`): the same ids for
    every word and special token in both codes, so that a seed's drawn embedding gives each token the same
    row (with vse_ray's own vocabulary `<start>` and `<end>` read other rows)."""
    folder = store.with_name(store.name + "_official_vocab")
    if not (folder / "manifest.json").exists():
        precomp = official / "f30k_precomp"
        subprocess.run(
            [
                *("vse-ray", "precompute", "--dataset", "precomp", "--precomp-dir", str(precomp)),
                *("--vocab", str(precomp / "vocab.json"), "--relevance", "svd", "--out", str(folder)),
            ],
            check=True,
        )
    return folder


def main() -> None:
    args, parity = parse_args()
    torch.set_num_threads(1)
    out = Path(parity.out).resolve()
    official, store = make_data(out, parity)
    record = official_run(args, parity, official)
    ids = record.pop("ids")
    runs: dict[str, Any] = {"official": record}
    if args.rounding:
        runs["official, rounding copy"] = official_run(args, parity, official, rounding=True)
        runs["official, rounding copy"].pop("ids")
    store = official_vocab_store(official, store)
    config = {**vse_ray_config(store, out, args.seed, parity), "output_dir": str(out / "replay")}
    caps = official / "f30k_precomp" / "train_caps.txt"
    for last in ("keep", "drop") if args.last == "both" else (args.last,):
        runs[f"vse_ray, official batches, last {last}"] = replay(config, ids, last == "drop", caps)
    own = out / parity.data_name / parity.tag / f"vse_ray_s{args.seed}.json"
    if args.own and own.exists():
        runs["vse_ray, own batches"] = {k: json.loads(own.read_text())[k] for k in ("val_rsum", "test_rsum")}
    sizes = sorted({len(rows) for epoch in ids for rows in epoch})
    result = {
        "system": parity.system,
        "data": parity.data_name,
        "seed": args.seed,
        "batch_sizes": sizes,
        **runs,
    }
    (out / f"{parity.system}_s{args.seed}_replay.json").write_text(json.dumps(result))
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
