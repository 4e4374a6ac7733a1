"""The image cache's name and files: other weights (another folder's relative path, a rewrite in place) get
another name, two writers of one cache at once both succeed with one finished folder, and a cache read back
is an array of its own (torch makes writable tensors of it)."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import numpy as np

from tests.support.tiny_clip import write_open_clip_arch
from vse_ray.evaluation.image_cache import cache_folder, model_label, read_image_cache, write_image_cache


def test_a_relative_weights_path_is_named_by_the_file_it_names(tmp_path, monkeypatch):
    arch = str(write_open_clip_arch(tmp_path / "arch.json"))
    labels = []
    for folder, content in (("rel1", b"weights one"), ("rel2", b"weights two")):
        (tmp_path / folder / "w").mkdir(parents=True)
        (tmp_path / folder / "w" / "clip.safetensors").write_bytes(content)
        monkeypatch.chdir(tmp_path / folder)
        labels.append(model_label("clip", {"arch": arch, "pretrained": "w/clip.safetensors"}))
    assert labels[0] != labels[1]
    monkeypatch.chdir(tmp_path / "rel1")
    assert model_label("clip", {"arch": arch, "pretrained": "w/clip.safetensors"}) == labels[0]  # stable


def test_weights_rewritten_in_place_get_another_name(tmp_path):
    weights = tmp_path / "hf"
    weights.mkdir()
    (weights / "model.safetensors").write_bytes(b"first")
    params = {"backend": "hf", "pretrained": str(weights)}
    before = model_label("clip", params)
    (weights / "model.safetensors").write_bytes(b"other")  # same size, same path: its time changed
    os.utime(weights / "model.safetensors", ns=(1, 1))
    assert model_label("clip", params) != before
    assert model_label("clip", {"backend": "hf", "pretrained": "not-a-file"}).startswith("clip-")


def _rows(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random((20_000, 64)).astype(np.float32)


def _write(folder: Path, barrier, seed: int) -> None:
    barrier.wait()
    write_image_cache(folder, np.arange(20_000), _rows(seed), "clip", {})


def test_two_writers_of_one_cache_at_once_leave_one_finished_folder(tmp_path):
    """Two processes write the same split's cache at the same moment, three times: both succeed (before,
    one failed on the shared temporary file in 8 of 8 trials), the folder holds one writer's rows and
    its cache.json, and no temporary is left."""
    context = multiprocessing.get_context("fork")  # the writers start in milliseconds
    for trial in range(3):
        data = tmp_path / f"data{trial}"
        folder = cache_folder(str(data), "clip-1234abcd", "test")
        barrier = context.Barrier(2)
        writers = [context.Process(target=_write, args=(folder, barrier, seed)) for seed in (0, 1)]
        for writer in writers:
            writer.start()
        for writer in writers:
            writer.join(60)
        assert [writer.exitcode for writer in writers] == [0, 0]
        assert sorted(p.name for p in folder.parent.iterdir()) == ["split=test"]
        assert sorted(p.name for p in folder.iterdir()) == ["cache.json", "part-00000000.parquet"]
        cached = read_image_cache(str(data), "clip-1234abcd", "test")
        assert cached is not None and any(np.array_equal(cached[1], _rows(seed)) for seed in (0, 1))


def test_a_cache_read_back_is_writable(tmp_path):
    """Arrow's zero-copy view is read-only: torch warned on every `--image-cache` run (split_data.py:75)."""
    write_image_cache(cache_folder(str(tmp_path), "m-1", "test"), np.arange(3), np.ones((3, 4)), "m", {})
    cached = read_image_cache(str(tmp_path), "m-1", "test")
    assert cached is not None and cached[1].flags.writeable
