"""Fixtures shared by the tests (registered in tests/conftest.py): a tiny precompute folder and its config."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.support.tiny_bert import write_tiny_bert
from tests.support.tiny_clip import IMAGE, write_hf_folder, write_open_clip_arch, write_open_clip_folder
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


@pytest.fixture(scope="session")
def tiny_pixel_dir(tmp_path_factory) -> Path:
    """The tiny folder with its stored images at the tiny CLIP towers' input size."""
    return write_tiny_store(tmp_path_factory.mktemp("tiny_pixels") / "tiny", image_side=IMAGE)


@pytest.fixture(scope="session")
def tiny_clip(tmp_path_factory) -> dict[str, dict[str, str]]:
    """model_params of tiny random CLIP checkpoints by name: an open_clip local-dir folder ("open_clip"),
    its config JSON with its weights file ("open_clip_file"), Hugging Face CLIPModel ("hf") and
    SiglipModel ("siglip") save_pretrained folders."""
    root = tmp_path_factory.mktemp("tiny_clip")
    folder = write_open_clip_folder(root / "open_clip")
    arch = write_open_clip_arch(root / "tiny_clip.json")
    return {
        "open_clip": {"pretrained": str(folder)},
        "open_clip_file": {"arch": str(arch), "pretrained": str(folder / "open_clip_model.safetensors")},
        "hf": {"backend": "hf", "pretrained": str(write_hf_folder(root / "hf_clip"))},
        "siglip": {"backend": "hf", "pretrained": str(write_hf_folder(root / "hf_siglip", "siglip"))},
    }


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
