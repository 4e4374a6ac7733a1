"""Timing events for `bench_vs_official.py`, in every process of a run (Ray's workers included).

Put this folder first on PYTHONPATH and name a file in ``BENCH_EVENTS``: Python imports this module at start,
and when vse_ray's engine or training data modules are imported, their step, batch, data-open, validation,
checkpoint and report calls are wrapped to append one JSON line each to that file::

    {"name": "step", "t0": <wall start>, "t1": <wall end>, "pid": ..., "threads": <torch threads>}

Without ``BENCH_EVENTS`` nothing is patched. `bench_vs_official.py` uses `timed` for the official code too, so
both sides pay the same cost per event (one append, tens of microseconds against steps of 0.1-3 s).
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.util
import json
import os
import sys
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

EVENTS = os.environ.get("BENCH_EVENTS")


def record(name: str, t0: float, t1: float) -> None:
    """Append one event to ``BENCH_EVENTS``."""
    torch = sys.modules.get("torch")
    threads = torch.get_num_threads() if torch is not None else None
    line = {"name": name, "t0": t0, "t1": t1, "pid": os.getpid(), "threads": threads}
    with open(str(EVENTS), "a") as out:
        out.write(json.dumps(line) + "\n")


def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn`, recording its wall-clock span as event `name`."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.time()
        try:
            return fn(*args, **kwargs)
        finally:
            record(name, t0, time.time())

    return wrapper


def _engine(module: ModuleType) -> None:
    module.train_step = timed("step", module.train_step)  # type: ignore[attr-defined]
    module.evaluate_split = timed("validate", module.evaluate_split)  # type: ignore[attr-defined]
    module.save_checkpoint = timed("checkpoint", module.save_checkpoint)  # type: ignore[attr-defined]
    builder = module.BatchBuilder  # type: ignore[attr-defined]
    builder.__call__ = timed("batch", builder.__call__)


def _training_data(module: ModuleType) -> None:
    data = module.TrainingData  # type: ignore[attr-defined]
    data.load = staticmethod(timed("data_open", data.load))


def _reporter(module: ModuleType) -> None:
    reporter = module.RayTrainReporter  # type: ignore[attr-defined]
    reporter.report = timed("report", reporter.report)


def _start(name: str, attribute: str) -> Callable[[ModuleType], None]:
    """A patch recording the span of function ``attribute`` of a module as event ``name`` (the phases of
    `vse-ray train` before its first step, for `bench_train_start.py`)."""

    def patch(module: ModuleType) -> None:
        setattr(module, attribute, timed(name, getattr(module, attribute)))

    return patch


def _trainer(module: ModuleType) -> None:
    module.get_or_create_experiment = timed("experiment", module.get_or_create_experiment)  # type: ignore[attr-defined]
    recorder = module.RunRecorder  # type: ignore[attr-defined]
    recorder.open = classmethod(timed("run_open", recorder.open.__func__))


def _torch_trainer(module: ModuleType) -> None:
    trainer = module.TorchTrainer  # type: ignore[attr-defined]
    trainer.fit = timed("fit", trainer.fit)


def _in_process(module: ModuleType) -> None:
    """`num_workers: 0`: the run's training is its `fit`, its reports the folder reporter's."""
    module.train_in_process = timed("fit", module.train_in_process)  # type: ignore[attr-defined]
    reporter = module.FolderReporter  # type: ignore[attr-defined]
    reporter.report = timed("report", reporter.report)


PATCHES: dict[str, Callable[[ModuleType], None]] = {
    "vse_ray.train.epoch_loop": _engine,
    "vse_ray.train.training_data": _training_data,
    "vse_ray.train.reporter": _reporter,
    "vse_ray.train.preflight": _start("checks", "check_training"),
    "vse_ray.train.rerun": _start("claim", "claim_run"),
    "vse_ray.ray_session": _start("ray_start", "ensure_ray"),
    "vse_ray.train.trainer": _trainer,
    "vse_ray.train.in_process": _in_process,
    "ray.train.torch": _torch_trainer,
    "vse_ray.train.worker": _start("worker", "train_loop_per_worker"),
}


class _PatchAfterImport(importlib.abc.MetaPathFinder):
    """Finds the modules of `PATCHES` as usual and patches each right after it runs."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name not in PATCHES:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_and_patch(module: ModuleType) -> None:
            run(module)
            PATCHES[name](module)

        spec.loader.exec_module = exec_and_patch  # type: ignore[method-assign]
        return spec


if EVENTS:
    sys.meta_path.insert(0, _PatchAfterImport())
