"""Fixtures of the tune tests: one MLflow sqlite store shared by the tests (creating one costs seconds)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def shared_mlflow_uri(tmp_path_factory) -> str:
    """An absolute sqlite tracking URI; tests use their own experiment names in it."""
    return f"sqlite:///{(tmp_path_factory.mktemp('mlflow') / 'mlflow.db').resolve()}"
