"""The 2-worker Gloo group shared by the gather tests: spawned once per session."""

from __future__ import annotations

import pytest

from tests.unit.train._two_workers import every_result
from tests.unit.train.test_gather import run_two_workers


@pytest.fixture(scope="session")
def two_worker_runs(tiny_data_dir, tmp_path_factory):
    """(config, per-rank {module name: results}) of one 2-process Gloo run."""
    return run_two_workers(every_result, tiny_data_dir, tmp_path_factory.mktemp("two_workers"))
