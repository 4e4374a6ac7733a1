"""Locked-image (LiT) training from the frozen tower's cached embeddings (`image_cache`): the same run as from
the pixels, without running the image tower, and the settings where a cache would be wrong refused in one
line before anything starts."""

from __future__ import annotations

import re
import shutil

import pytest
import torch

from tests.support.cli import one_error_line, run_cli
from tests.support.local_reporter import LocalReporter
from tests.support.tiny_store import tiny_config
from vse_ray.checkpoint_files import load_checkpoint
from vse_ray.data.store.split_data import load_image_store
from vse_ray.evaluation.image_cache import cache_folder, write_image_cache
from vse_ray.models import build_model
from vse_ray.models.clip_towers import HFTowers, OpenClipTowers
from vse_ray.train.epoch_loop import run_training
from vse_ray.train.locked_image import CACHED_SPLITS, cache_label

BACKENDS = ("open_clip", "hf")


def _write_caches(data, cfg) -> None:
    """The caches `compute_image_cache` writes (its rows are `encode_images` of the stored images, in the
    split's order: tests/integration/test_image_cache.py), written here without Ray."""
    model = build_model("clip", **cfg.model_params).eval()
    for split in CACHED_SPLITS:
        store = load_image_store(str(data), split, raw=True)
        with torch.no_grad():
            embeddings = model.encode_images(torch.from_numpy(store.values)).numpy()
        folder = cache_folder(str(data), cache_label(cfg), split)
        write_image_cache(folder, store.image_ids, embeddings, "clip", cfg.model_params)


def _train(cfg, out, calls: list[int]):
    """Train `cfg` in this process, counting the image tower's calls; the history and the last weights."""
    reporter = LocalReporter(out)
    with pytest.MonkeyPatch.context() as patch:
        for towers in (OpenClipTowers, HFTowers):
            original = towers.encode_image

            def counted(self, pixels, original=original):
                calls.append(len(pixels))
                return original(self, pixels)

            patch.setattr(towers, "encode_image", counted)
        run_training(cfg.checked(), reporter)
    return reporter.history, load_checkpoint(reporter.checkpoints[-1])["model"]


@pytest.fixture(scope="module", params=BACKENDS)
def runs(request, tiny_pixel_dir, tiny_clip, tmp_path_factory):
    """The same locked-image InfoNCE run (5 steps and a validation) from the pixels and from the cache."""
    root = tmp_path_factory.mktemp("locked")
    data = root / "data"
    shutil.copytree(tiny_pixel_dir, data)
    cfg = tiny_config(
        data,
        root / "out",
        model="clip",
        loss="infonce",
        model_params=tiny_clip[request.param],
        lock_image=True,
        epochs=1,
        train_images=16,
    )
    _write_caches(data, cfg)
    model = build_model("clip", **cfg.model_params)
    image = {name for group in model.layer_groups()["image"] for name in group}
    result: dict = {"start": model.state_dict(), "image": image}
    for image_cache in (False, True):
        calls: list[int] = []
        run = cfg.__class__(**{**cfg.__dict__, "image_cache": image_cache})
        history, weights = _train(run, root / f"ckpt_{image_cache}", calls)
        result[image_cache] = (history, weights, calls)
    return result


def _compared(name: str, weight: torch.Tensor) -> torch.Tensor:
    """A weight without its attention key biases: their gradient is 0 in exact arithmetic (the softmax is
    invariant to a shift shared by all keys), so Adam turns its rounding noise into steps of about ±lr."""
    if name.endswith("k_proj.bias"):
        return weight[:0]
    if name.endswith("in_proj_bias"):  # open_clip: query, key and value biases in one
        third = len(weight) // 3
        return torch.cat([weight[:third], weight[2 * third :]])
    return weight


def test_a_cached_run_equals_the_run_from_pixels(runs):
    (pixel_history, pixel_weights, _), (cached_history, cached_weights, _) = runs[False], runs[True]
    assert len(pixel_history) == len(cached_history) == 1
    for pixels, cached in zip(pixel_history, cached_history, strict=True):
        assert cached.keys() == pixels.keys()
        for key, value in pixels.items():  # the loss, the learned logit scale, every validation metric
            assert cached[key] == pytest.approx(value, rel=1e-5, abs=1e-6), key
    assert cached_weights.keys() == pixel_weights.keys()
    start, image = runs["start"], runs["image"]
    for name, value in pixel_weights.items():
        pixels, cached, first = (_compared(name, w) for w in (value, cached_weights[name], start[name]))
        if name in image:  # locked: as the checkpoint gave it
            assert torch.equal(pixels, first) and torch.equal(cached, first), name
        else:  # within a thousandth of how far the five steps moved it
            assert (cached - pixels).norm() <= 1e-3 * (pixels - first).norm() + 1e-7, name
    assert any(not torch.equal(value, start[name]) for name, value in pixel_weights.items())


def test_a_cached_run_never_runs_the_image_tower(runs):
    assert sum(runs[False][2]) > 0  # the run from pixels encodes images, in training and validation
    assert runs[True][2] == []


def _train_args(data, params: dict[str, str], out, *more: str) -> list[str]:
    sets = [arg for key, value in params.items() for arg in ("--set", f"model_params.{key}={value}")]
    return ["train", "--data", str(data), "--model", "clip", *sets, "--output-dir", str(out), *more]


REFUSED = {
    "tower not locked": ([], ["image_cache: needs lock_image true"]),
    "unlocked groups": (
        ["--lock-image", "--set", "lock_image_unlocked_groups=1"],
        ["image_cache: the image tower's last 1 layer groups train (lock_image_unlocked_groups)"],
    ),
    "frozen for some epochs": (
        ["--lock-image", "--freeze-image-epochs", "1", "--epochs", "2"],
        ["freeze_image_epochs: the image tower is locked for every epoch"],
    ),
    "cnn fine-tuned on crops": (["--lock-image", "--finetune"], ["image_cache: finetune trains a CNN"]),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_cache_that_would_be_wrong_is_refused_in_one_line(case, tiny_pixel_dir, tiny_clip, tmp_path):
    more, fragments = REFUSED[case]
    out = tmp_path / "out"
    result = run_cli(_train_args(tiny_pixel_dir, tiny_clip["open_clip"], out, "--image-cache", *more))
    one_error_line(result, *fragments)
    assert not out.exists()


def test_other_weights_than_the_checkpoints_are_refused(tiny_pixel_dir, tiny_clip, tmp_path):
    params = tiny_clip["open_clip_file"]
    weights = ["--set", f"init_weights={params['pretrained']}"]  # any file: refused before it is read
    out = tmp_path / "out"
    result = run_cli(_train_args(tiny_pixel_dir, params, out, "--lock-image", "--image-cache", *weights))
    one_error_line(result, "image_cache: init_weights replaces the image tower's weights")
    assert not out.exists()


def test_another_model_is_refused(tiny_data_dir, tmp_path):
    out = tmp_path / "out"
    result = run_cli(["train", "--data", str(tiny_data_dir), "--output-dir", str(out), "--image-cache"])
    one_error_line(result, "image_cache: a setting of the clip model's towers, not of 'vsepp'")
    assert not out.exists()


def test_a_folder_without_stored_images_is_refused(tiny_region_dir, tiny_clip, tmp_path):
    out = tmp_path / "out"
    args = _train_args(tiny_region_dir, tiny_clip["open_clip"], out, "--lock-image", "--image-cache")
    one_error_line(run_cli(args), "model 'clip' needs raw images", "region features")
    assert not out.exists()


def test_a_cache_missing_in_a_worker_names_its_folder(tiny_pixel_dir, tiny_clip, tmp_path):
    cfg = tiny_config(
        tiny_pixel_dir,
        tmp_path / "out",
        model="clip",
        loss="infonce",
        model_params=tiny_clip["hf"],
        lock_image=True,
        image_cache=True,
    )
    folder = cache_folder(str(tiny_pixel_dir), cache_label(cfg), "train")
    with pytest.raises(ValueError, match=re.escape(f"{folder}: no cached image embeddings")):
        run_training(cfg.checked(), LocalReporter(tmp_path / "ckpt"))
