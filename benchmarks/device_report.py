"""The GPU report: step parity on CUDA, then every GPU benchmark, in one command on a GPU machine.

Stages, in this order (each a subprocess with its own time limit; a stage that fails or runs out of time is
reported as such and the next one runs):

| stage | what |
| --- | --- |
| `parity` | `tests/parity/test_step_parity.py` on CUDA (`VSE_RAY_TEST_DEVICE=cuda`) |
| `vs_official` | `step_vs_official.py`: vse_ray's step against the authors' on the same card (≥ 1.0×) |
| `train_step` | `bench_train_step.py`: each loss's step against VSE++'s (≤ 1.3×), VSE∞'s against VSE++'s |
| `train_step_vse_inf` | every loss's step on VSE∞ against the VSE++ loss's (≤ 1.15×) |
| `cider_device` | `bench_cider_batch.py --device cuda`: SAM's CIDEr-D batch matrix on the GPU vs the host |
| `loop_step` | each loss through the epoch loop (batch built on its thread), VSE++ (≤ 1.3×) |
| `loop_step_vse_inf` | the same on VSE∞ (≤ 1.15×) |
| `epoch` | `gpu_epoch.py`: a store-fed Flickr30K-size VSE∞ epoch, GPU utilisation (≥ 90 %), loader (≥ 3×) |
| `losses` | `bench_losses.py`: loss forward + backward against VSE++'s |
| `pair_scoring` | `bench_pair_scoring.py`: SCAN and SGRAF all-pairs scoring against a per-pair loop |

Each stage's output goes to `<out>/<stage>.log`; `<out>/report.md` gathers them under the machine's
description, and `--docs` also writes it into `docs/performance.md` between its device-report markers.
The machine needs PyTorch with CUDA and this project's Python dependencies except Ray and MLflow, which no
stage uses.

    python benchmarks/device_report.py --official /path/to/checkouts --out gpu_report --docs
    python benchmarks/device_report.py --stages parity epoch --budget-s 300
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
BENCH = REPO_ROOT / "benchmarks"
DOC = REPO_ROOT / "docs" / "performance.md"
START, END = "<!-- device-report:start -->", "<!-- device-report:end -->"


def stages(args: argparse.Namespace) -> dict[str, tuple[list[str], int]]:
    """Each stage's command and time limit (s)."""
    py = [sys.executable]
    captions = ["--captions", str(args.captions)]
    return {
        "parity": (
            py
            + [
                "-m",
                "pytest",
                "-q",
                "--noconftest",
                "-p",
                "no:cacheprovider",
                "tests/parity/test_step_parity.py",
            ],
            240,
        ),
        "vs_official": (
            py
            + [
                str(BENCH / "step_vs_official.py"),
                "--official",
                str(args.official),
                *captions,
                "--json",
                str(args.out / "vs_official.json"),
                "--profile",
            ],
            300,
        ),
        "train_step": (
            py + [str(BENCH / "bench_train_step.py"), "--device", "cuda", "--repeats", "20", *captions],
            240,
        ),
        "train_step_vse_inf": (
            py
            + [
                str(BENCH / "bench_train_step.py"),
                "--device",
                "cuda",
                "--repeats",
                "20",
                "--loss-model",
                "vse_inf",
                "--no-models",
                *captions,
            ],
            240,
        ),
        "cider_device": (
            py + [str(BENCH / "bench_cider_batch.py"), "--device", "cuda", "--captions", str(args.captions)],
            120,
        ),
        **{
            f"loop_step{suffix}": (
                py
                + [str(BENCH / "bench_train_step.py"), "--device", "cuda", "--repeats", "7"]
                + ["--epoch-loop", "20", "--no-models", "--loss-model", model, *captions],
                240,
            )
            for suffix, model in (("", "vsepp"), ("_vse_inf", "vse_inf"))
        },
        "epoch": (py + [str(BENCH / "gpu_epoch.py"), *captions, "--json", str(args.out / "epoch.json")], 360),
        "losses": (py + [str(BENCH / "bench_losses.py"), "--device", "cuda"], 240),
        "pair_scoring": (py + [str(BENCH / "bench_pair_scoring.py"), "--device", "cuda"], 300),
    }


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--official",
        type=Path,
        default=REPO_ROOT / ".official",
        help="folder of the authors' checkouts (see step_vs_official.py)",
    )
    parser.add_argument(
        "--captions",
        type=Path,
        default=REPO_ROOT / "../shared/data/f30k_test_caps.txt",
        help="Flickr30K caption file (lengths and CIDEr vectors); random words when absent",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("device_report"), help="folder for the logs and report"
    )
    parser.add_argument("--stages", nargs="+", help="run only these stages (default: all, in order)")
    parser.add_argument(
        "--budget-s",
        type=float,
        default=0,
        help="stop the stages after this many seconds in all (0: no limit)",
    )
    parser.add_argument("--docs", action="store_true", help="write the report into docs/performance.md")
    return parser.parse_args()


def machine() -> str:
    """One line: the GPU, its driver, PyTorch and the CPU count."""
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    return (
        f"{gpu}, PyTorch {torch.__version__} (CUDA {torch.version.cuda}), {os.cpu_count()} CPU cores, "
        f"Python {platform.python_version()}"
    )


def run_stage(name: str, command: list[str], limit: int, out: Path) -> tuple[str, float]:
    """Run one stage, its output to `<out>/<name>.log`; its status and wall time."""
    env = dict(os.environ, VSE_RAY_TEST_DEVICE="cuda", PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), str(BENCH), env.get("PYTHONPATH", "")])
    start = time.perf_counter()
    with (out / f"{name}.log").open("w") as log:
        try:
            rc = subprocess.run(
                command, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=limit
            ).returncode
            status = "ok" if rc == 0 else f"failed (rc {rc})"
        except subprocess.TimeoutExpired:
            status = f"stopped at its {limit} s limit"
    return status, time.perf_counter() - start


def report(out: Path, header: str, done: dict[str, tuple[str, float]]) -> str:
    """The markdown report: the machine, then each stage's status and the tail of its output."""
    lines = [f"Machine: {header}.", ""]
    for name, (status, seconds) in done.items():
        text = (out / f"{name}.log").read_text(errors="replace").splitlines()
        if status == "ok":  # warnings and their source lines out; a failure keeps its traceback
            text = [line for line in text if "Warning" not in line and not line.startswith("  ")] or text
        lines += [f"**{name}**: {status}, {seconds:.0f} s", "", "```", *text[-40:], "```", ""]
    return "\n".join(lines)


def write_docs(section: str) -> None:
    """Replace the text between the device-report markers of docs/performance.md."""
    text = DOC.read_text()
    if START not in text or END not in text:
        raise SystemExit(f"error: {DOC}: no {START} … {END} markers to write the report between")
    head, rest = text.split(START, 1)
    DOC.write_text(f"{head}{START}\n{section}\n{END}{rest.split(END, 1)[1]}")


def main() -> None:
    args = parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    plan = stages(args)
    unknown = sorted(set(args.stages or []) - set(plan))
    if unknown:
        raise SystemExit(f"error: --stages: unknown {unknown}; choose from {list(plan)}")
    header = machine()
    print(header, flush=True)
    began, done = time.perf_counter(), {}
    for name, (command, limit) in plan.items():
        if args.stages and name not in args.stages:
            continue
        left = args.budget_s - (time.perf_counter() - began) if args.budget_s else limit
        if left < 10:
            done[name] = ("not started (budget spent)", 0.0)
            (args.out / f"{name}.log").write_text("")
            continue
        done[name] = run_stage(name, command, int(min(limit, left)), args.out)
        print(f"{name}: {done[name][0]} in {done[name][1]:.0f} s", flush=True)
    section = report(args.out, header, done)
    (args.out / "report.md").write_text(section)
    if args.docs:
        write_docs(section)


if __name__ == "__main__":
    main()
