"""Shared fixtures: one local Ray instance per test session, seeded RNGs, temp MLflow stores."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")


def seed_all(seed: int = 42) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


@pytest.fixture(autouse=True)
def _seeded() -> None:
    seed_all(42)


@pytest.fixture(scope="session")
def ray_session():
    """A single local Ray instance shared by every test that needs Ray (start-up costs 5-9 s)."""
    import ray

    if not ray.is_initialized():
        ray.init(
            address="local",
            num_cpus=4,
            include_dashboard=False,
            object_store_memory=300 * 1024 * 1024,
            log_to_driver=False,
            configure_logging=False,
        )
    yield ray
    ray.shutdown()


@pytest.fixture()
def mlflow_uri(tmp_path) -> str:
    """An absolute sqlite tracking URI in a throwaway folder."""
    return f"sqlite:///{(tmp_path / 'mlflow.db').resolve()}"
