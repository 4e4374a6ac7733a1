"""Shared fixtures: one local Ray instance per test session, seeded RNGs, temp MLflow stores."""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.support.worker_faults import worker_setup

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
# Ray Train's controller checks its workers every 2 s by default, so a run's start and end wait up to 2 s
# each; the tests' tiny runs take seconds.
os.environ.setdefault("RAY_TRAIN_HEALTH_CHECK_INTERVAL_S", "0.5")
# The session's Ray workers at the suite's priority, as vse_ray's own local instances run theirs
# (vse_ray/ray_session.py): Ray's default, nice +15, starves them beside any other work on the machine.
os.environ.setdefault("RAY_worker_niceness", "0")

pytest_plugins = ["tests.support.fixtures"]  # the tiny precompute folder and config, for every test folder


def seed_all(seed: int = 42) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


@pytest.fixture(autouse=True)
def _seeded() -> None:
    seed_all(42)


@pytest.fixture(scope="session")
def ray_session(worker_faults):
    """A single local Ray instance shared by every test that needs Ray (start-up costs 5-9 s); its workers can
    be asked to die (`worker_faults`)."""
    import ray

    if not ray.is_initialized():
        ray.init(
            address="local",
            num_cpus=4,
            include_dashboard=False,
            object_store_memory=300 * 1024 * 1024,
            log_to_driver=False,
            configure_logging=False,
            runtime_env={"worker_process_setup_hook": worker_setup(str(worker_faults))},
        )
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def worker_faults(tmp_path_factory) -> Path:
    """The folder Ray workers read fault requests from (`tests.support.worker_faults.request_kill`)."""
    return tmp_path_factory.mktemp("worker_faults")


@pytest.fixture()
def mlflow_uri(tmp_path) -> str:
    """An absolute sqlite tracking URI in a throwaway folder."""
    return f"sqlite:///{(tmp_path / 'mlflow.db').resolve()}"


@pytest.fixture()
def empty_cwd(tmp_path_factory, monkeypatch) -> Path:
    """Run the test from an empty current folder; `stray_files(empty_cwd)` then lists what a command wrote
    there, outside the output folder it was given."""
    folder = tmp_path_factory.mktemp("cwd")
    monkeypatch.chdir(folder)
    return folder


def stray_files(folder: Path) -> list[str]:
    """Every path under `folder`, relative to it (empty when nothing was written there)."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))
