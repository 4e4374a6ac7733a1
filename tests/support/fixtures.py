"""Fixtures shared by the tests (registered in tests/conftest.py): a tiny precompute folder and its config."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.support.tiny_bert import write_tiny_bert
from tests.support.tiny_store import tiny_config, write_tiny_store
from vse_ray.train.config import TrainConfig


@pytest.fixture(scope="session")
def tiny_data_dir(tmp_path_factory) -> Path:
    return write_tiny_store(tmp_path_factory.mktemp("tiny") / "tiny")


@pytest.fixture(scope="session")
def tiny_region_dir(tmp_path_factory) -> Path:
    """The tiny folder with 5 float16 regions per image (Arrow IPC shards)."""
    return write_tiny_store(tmp_path_factory.mktemp("tiny_regions") / "tiny", regions=5, dtype="float16")


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory) -> Path:
    """A one-layer random BERT with the tiny store's words as its wordpiece vocabulary."""
    return write_tiny_bert(tmp_path_factory.mktemp("tiny_bert") / "bert")


@pytest.fixture()
def tiny_cfg(tiny_data_dir, tmp_path) -> TrainConfig:
    return tiny_config(tiny_data_dir, tmp_path / "out")


@pytest.fixture()
def one_torch_thread():
    """Tiny tensors: one intra-op thread (on a loaded machine a second one makes each small op wait)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
