"""Where `vse-ray train`'s fixed cost goes: each phase from the command's start to its first training step.

Runs the command (`--runs` times, each in a fresh output folder, alternating with `--compare`'s checkout when
given, so both meet the same load) with the timing hook of `bench_vs_official.py` (`timing_hook/`), which
records each phase's span in every process of the run, the Ray Train worker's included:

- ``imports``: the process's start (taken by this script just before it starts the command) to the CLI's
  checks (Python, typer, the CLI module and the config);
- ``checks``: the config, data folder and model input checked (`check_training`), torch imported there;
- ``claim, store, Ray``: from the checks to the later of the claim's end (the run folder locked, the config
  compared, the MLflow store created: `claim_run`) and Ray's start (`ensure_ray`: a local instance started,
  or the running one joined), the imports between them included; the two spans are also listed alone
  (``claim`` and ``ray start``, not added up: a command may run them at the same time);
- ``mlflow run``: the experiment and the run created, its parameters logged (`get_or_create_experiment`,
  `RunRecorder.open`);
- ``worker start``: `TorchTrainer.fit` called to the worker's training function entered (Ray Train's
  controller and worker actors, their imports); with ``--num-workers 0`` (no Ray, no worker: there is no
  ``ray start`` either) the training's start in the command's process up to its data open;
- ``data open``: the worker's `TrainingData.load`;
- ``set-up``: the model, loss and optimiser built, up to the first step;
- ``other``: the gaps between those (the driver's own work between phases).

Each run also prints the 1-minute load average before and after it, and the command's CPU seconds (its
process and every child it waited for).

    python benchmarks/bench_train_start.py --data data/regions_vr --out /tmp/start --runs 3 \\
        -- --model vse_inf --epochs 1 --batch-size 128
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HOOK = Path(__file__).resolve().parent / "timing_hook"
PHASES = ("imports", "checks", "claim, store, Ray", "mlflow run", "worker start", "data open", "set-up")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="a precompute folder")
    parser.add_argument("--out", required=True, help="working folder (one output folder per run)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--compare", help="another checkout of vse_ray, run in turn with this one")
    parser.add_argument("train_args", nargs="*", help="more `vse-ray train` options, after --")
    return parser.parse_args()


def phases(events: list[dict], start: float) -> dict[str, float]:
    """Seconds of each phase of `PHASES` (and ``other``, ``to first step``) from the run's events."""
    first = {}
    for event in sorted(events, key=lambda e: e["t0"]):
        first.setdefault(event["name"], event)
    span = lambda name: first[name]["t1"] - first[name]["t0"]  # noqa: E731
    ready = max(first["claim"]["t1"], first.get("ray_start", first["claim"])["t1"])  # none in process
    out = {
        "imports": first["checks"]["t0"] - start,
        "checks": span("checks"),
        "claim, store, Ray": ready - first["checks"]["t1"],
        "claim": span("claim"),
        "ray start": span("ray_start") if "ray_start" in first else 0.0,
        "mlflow run": span("experiment") + span("run_open"),
        # in process (`--num-workers 0`) no worker starts: the engine's imports up to the data's open
        "worker start": first.get("worker", first["data_open"])["t0"] - first["fit"]["t0"],
        "data open": span("data_open"),
        "set-up": first["step"]["t0"] - first["data_open"]["t1"],
    }
    out["to first step"] = first["step"]["t0"] - start
    out["other"] = out["to first step"] - sum(out[name] for name in PHASES)
    return out


def timed_run(checkout: Path, args: argparse.Namespace, run: Path) -> dict[str, float]:
    """One `vse-ray train` of ``checkout``'s vse_ray into ``run``: its phases, CPU seconds and load."""
    run.mkdir(parents=True)
    events = run / "events.jsonl"
    path = os.pathsep.join([str(HOOK), str(checkout)])
    env = {**os.environ, "BENCH_EVENTS": str(events), "PYTHONPATH": path}
    command = [
        sys.executable,
        "-m",
        "vse_ray.cli.main",
        "train",
        "--data",
        args.data,
        "--output-dir",
        str(run),
    ]
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.time()
    with open(run / "stdout.txt", "w") as log:
        subprocess.run(
            [*command, *args.train_args], env=env, cwd=checkout, stdout=log, stderr=log, check=True
        )
    end = time.time()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    recorded = [json.loads(line) for line in events.read_text().splitlines()]
    row = phases(recorded, start)
    row.update({"command": end - start, "cpu": cpu, "load before": load, "load after": os.getloadavg()[0]})
    (run / "start.json").write_text(json.dumps({"start": start, **row}))
    return row


def main() -> None:
    args = parse_args()
    checkouts = {"this": Path(__file__).resolve().parents[1]}
    if args.compare:
        checkouts["compare"] = Path(args.compare).resolve()
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in checkouts}
    out = Path(args.out)
    for i in range(args.runs):
        for name, checkout in checkouts.items():
            row = timed_run(checkout, args, out / f"{name}_{i}_{time.strftime('%H%M%S')}")
            rows[name].append(row)
            print(name, i, json.dumps({k: round(v, 2) for k, v in row.items()}), flush=True)
    keys = [*PHASES, "other", "to first step", "claim", "ray start", "command", "cpu", "load before"]
    print("| phase | " + " | ".join(f"{name} (median of {args.runs})" for name in checkouts) + " |")
    print("| --- |" + " ---: |" * len(checkouts))
    for key in keys:
        cells = [f"{statistics.median(r[key] for r in rows[name]):.1f}" for name in checkouts]
        print(f"| {key} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
