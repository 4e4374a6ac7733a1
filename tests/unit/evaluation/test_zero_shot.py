"""`vse-ray evaluate --model clip`: for each backend, the similarity matrix and R@K are those of the library's
own calls (open_clip's encode_image / encode_text, transformers' get_image_features / get_text_features) with
the checkpoint's own preprocessing and tokenizer; bad input stops in one line before anything starts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from tests.support.cli import one_error_line, run_cli, zero_shot_args
from tests.support.tiny_clip import CONTEXT, OPEN_CLIP_CFG
from tests.support.tiny_store import write_tiny_store
from vse_ray.data.store.split_data import SplitData, load_split
from vse_ray.evaluation.embed import split_similarities
from vse_ray.models import build_model

CHECKPOINTS = ["open_clip", "open_clip_file", "hf", "siglip"]
KS = (1, 5, 10)


def _open_clip_sims(params: dict[str, str], images: list[Image.Image], texts: list[str]) -> torch.Tensor:
    import open_clip

    if "arch" in params:  # a config JSON and a weights file
        open_clip.add_model_config(params["arch"])
        name, pretrained = Path(params["arch"]).stem, params["pretrained"]
    else:  # a local-dir folder
        name, pretrained = f"local-dir:{params['pretrained']}", None
    model, _, preprocess = open_clip.create_model_and_transforms(name, pretrained=pretrained)
    tokenizer = open_clip.get_tokenizer(name)
    model.eval()
    img = model.encode_image(torch.stack([preprocess(image) for image in images]), normalize=True)
    return img @ model.encode_text(tokenizer(texts), normalize=True).T


def _transformers_sims(
    folder: str, images: list[Image.Image], texts: list[str], siglip: bool
) -> torch.Tensor:
    from transformers import AutoImageProcessor, AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(folder).eval()
    pixels = AutoImageProcessor.from_pretrained(folder)(images=images, return_tensors="pt")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    padding = "max_length" if siglip else True  # SigLIP reads captions padded to its context, unmasked
    tokens = tokenizer(texts, padding=padding, truncation=True, max_length=CONTEXT, return_tensors="pt")
    img = model.get_image_features(**pixels).pooler_output
    txt = model.get_text_features(**tokens).pooler_output
    return torch.nn.functional.normalize(img, dim=-1) @ torch.nn.functional.normalize(txt, dim=-1).T


@torch.no_grad()
def library_sims(name: str, params: dict[str, str], split: SplitData) -> np.ndarray:
    """The (images, captions) cosine matrix of the split computed with the library alone, from the stored
    images decoded as PIL images and the caption texts in caption_id order."""
    assert split.images.pixels is not None
    images = [Image.fromarray(pixels) for pixels in split.images.pixels]
    if name.startswith("open_clip"):
        return _open_clip_sims(params, images, split.texts).numpy()
    return _transformers_sims(params["pretrained"], images, split.texts, name == "siglip").numpy()


def recall(sims: np.ndarray, img_of_cap: np.ndarray) -> dict[str, float]:
    """R@K of both directions, by loops over the queries (five-caption protocol: an image's rank is its
    best-ranked caption's)."""
    out = {}
    i2t = [
        min(np.flatnonzero(np.argsort(-row) == c)[0] for c in np.flatnonzero(img_of_cap == i))
        for i, row in enumerate(sims)
    ]
    t2i = [np.flatnonzero(np.argsort(-sims[:, c]) == i)[0] for c, i in enumerate(img_of_cap)]
    for k in KS:
        out[f"R_at_{k}_i2t"] = 100.0 * float(np.mean(np.array(i2t) < k))
        out[f"R_at_{k}_t2i"] = 100.0 * float(np.mean(np.array(t2i) < k))
    return out


@pytest.fixture(scope="module")
def pixel_split(tiny_pixel_dir) -> SplitData:
    return load_split(str(tiny_pixel_dir), "test", raw=True)


@pytest.mark.parametrize("name", CHECKPOINTS)
def test_zero_shot_equals_the_library(name, tiny_clip, tiny_pixel_dir, pixel_split, tmp_path):
    params = tiny_clip[name]
    expected = library_sims(name, params, pixel_split)
    sims = split_similarities(build_model("clip", **params), pixel_split, 7, torch.device("cpu"))
    np.testing.assert_allclose(sims, expected, rtol=0, atol=1e-5)

    out = tmp_path / "out"
    result = run_cli([*zero_shot_args(params, tiny_pixel_dir, out), "--split", "test"])
    assert result.exit_code == 0, result.output
    (report_path,) = (out / "reports").glob("clip-*_test_full.json")
    report = json.loads(report_path.read_text())
    reference = recall(expected, pixel_split.img_of_cap)
    assert {k: report["metrics"][k] for k in reference} == reference
    assert "CS_at_5_i2t" in report["metrics"] and "tau_i2t_scene" in report["metrics"]
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{out / 'mlflow.db'}")
    (run,) = client.search_runs([client.get_experiment_by_name("zero_shot").experiment_id])
    assert run.info.run_name == report_path.name.removesuffix("_test_full.json")
    assert run.data.params["model_params.pretrained"] == params["pretrained"]


def test_weights_rewritten_in_place_are_scored_into_a_run_of_their_own(tiny_clip, tiny_pixel_dir, tmp_path):
    """The same command after the weights file changed in place: a second run and report (before, the run
    `clip-<hash>` was reused and got a second test/rsum at step 0, and the report was overwritten)."""
    from mlflow import MlflowClient
    from safetensors.torch import load_file, save_file

    weights = tmp_path / "clip.safetensors"
    shutil.copy(tiny_clip["open_clip_file"]["pretrained"], weights)
    params = {"arch": tiny_clip["open_clip_file"]["arch"], "pretrained": str(weights)}
    out = tmp_path / "out"
    for _ in range(2):
        result = run_cli([*zero_shot_args(params, tiny_pixel_dir, out), "--split", "test"])
        assert result.exit_code == 0, result.output
        tensors = load_file(str(weights))
        save_file({k: v + 0.01 * torch.randn_like(v) for k, v in tensors.items()}, str(weights))
    reports = sorted((out / "reports").glob("clip-*_test_full.json"))
    client = MlflowClient(f"sqlite:///{out / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("zero_shot").experiment_id])
    assert len(reports) == 2 and {run.info.run_name for run in runs} == {
        path.name.removesuffix("_test_full.json") for path in reports
    }
    assert [len(client.get_metric_history(run.info.run_id, "test/rsum")) for run in runs] == [1, 1]


@pytest.mark.parametrize("side", [16, 64])
def test_other_image_sizes_are_resized_as_the_library(side, tiny_clip, tmp_path):
    """Stored images of 16 or 64 px read by a 32 px tower: torchvision's antialiased uint8 resize on the
    model's side, PIL's in the library's transform."""
    split = load_split(str(write_tiny_store(tmp_path / "tiny", image_side=side)), "test", raw=True)
    for name in ("open_clip", "hf"):
        expected = library_sims(name, tiny_clip[name], split)
        sims = split_similarities(build_model("clip", **tiny_clip[name]), split, 8, torch.device("cpu"))
        np.testing.assert_allclose(sims, expected, rtol=0, atol=1e-5)


def _bad_arch(tmp_path: Path) -> str:
    """An open_clip config whose towers are narrower than the tiny weights."""
    cfg = json.loads(json.dumps(OPEN_CLIP_CFG))
    cfg["vision_cfg"]["width"] = 32
    (tmp_path / "narrow.json").write_text(json.dumps(cfg))
    return str(tmp_path / "narrow.json")


def _arch_with(tmp_path: Path, section: str, key: str, value: object) -> dict[str, str]:
    """Random towers of the tiny open_clip config with one key set (`section` "" is the top level)."""
    cfg = json.loads(json.dumps(OPEN_CLIP_CFG))
    (cfg[section] if section else cfg)[key] = value
    (tmp_path / "arch.json").write_text(json.dumps(cfg))
    return {"arch": str(tmp_path / "arch.json")}


def _pickled(tiny_clip, tmp_path: Path, how: str) -> dict[str, str]:
    """The tiny weights as a `pickle.dump` file ("pickle") or a torch.save holding a foreign type."""
    import argparse
    import pickle

    path = tmp_path / "weights.pt"
    if how == "pickle":
        path.write_bytes(pickle.dumps({"state_dict": {}}))
    else:
        torch.save({"state_dict": argparse.Namespace(layers=2)}, path)
    return {"arch": tiny_clip["open_clip_file"]["arch"], "pretrained": str(path)}


def _hf_copy(tiny_clip, tmp_path: Path, change) -> dict[str, str]:
    folder = tmp_path / "hf"
    shutil.copytree(tiny_clip["hf"]["pretrained"], folder)
    change(folder)
    return {"backend": "hf", "pretrained": str(folder)}


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:200])


def _narrow_projection(folder: Path) -> None:
    config = json.loads((folder / "config.json").read_text())
    config["projection_dim"] = 16
    (folder / "config.json").write_text(json.dumps(config))


BAD = {
    "open_clip hub tag": (
        lambda c, t: {"arch": "ViT-B-32", "pretrained": "openai"},
        ["model_params.pretrained 'openai' is a hub tag", "local-dir"],
    ),
    "hf hub name": (
        lambda c, t: {"backend": "hf", "pretrained": "openai/clip-vit-base-patch32"},
        ["is a hub name", "save_pretrained"],
    ),
    "missing weights file": (
        lambda c, t: {"arch": c["open_clip_file"]["arch"], "pretrained": str(t / "gone.safetensors")},
        ["gone.safetensors: no such file or folder", "local-dir"],
    ),
    "hf folder without weights": (
        lambda c, t: _hf_copy(c, t, lambda f: (f / "model.safetensors").unlink()),
        ["no model.safetensors", "save_pretrained"],
    ),
    "corrupt weights file": (
        lambda c, t: {"arch": c["open_clip_file"]["arch"], "pretrained": str(_corrupt(c, t))},
        ["bad.safetensors: not a readable weights file"],
    ),
    "corrupt hf weights": (
        lambda c, t: _hf_copy(c, t, lambda f: _truncate(f / "model.safetensors")),
        ["not a readable weights file"],
    ),
    "config not the weights'": (
        lambda c, t: {"arch": _bad_arch(t), "pretrained": c["open_clip_file"]["pretrained"]},
        ["the weights do not fit the architecture"],
    ),
    "hf config not the weights'": (
        lambda c, t: _hf_copy(c, t, _narrow_projection),
        ["the weights do not fit"],
    ),
    "arch layers not a number": (
        lambda c, t: _arch_with(t, "vision_cfg", "layers", "two"),
        ["arch.json: vision_cfg.layers 'two': expected a list of 4 integers or an integer"],
    ),
    "arch unknown key": (
        lambda c, t: _arch_with(t, "text_cfg", "colour", "red"),
        ["arch.json: text_cfg.colour: not a key of open_clip's text_cfg"],
    ),
    "arch vocabulary below the tokenizer's": (
        lambda c, t: _arch_with(t, "text_cfg", "vocab_size", 10),
        ["arch.json: text_cfg.vocab_size 10 is smaller than its tokenizer's vocabulary (49408 ids)"],
    ),
    "arch embed_dim 0": (
        lambda c, t: _arch_with(t, "", "embed_dim", 0),
        ["arch.json: embed_dim 0: must be at least 1"],
    ),
    "arch vision_cfg null": (
        lambda c, t: _arch_with(t, "", "vision_cfg", None),
        ["arch.json: vision_cfg None: expected an object (CLIPVisionCfg)"],
    ),
    "weights written by pickle.dump": (
        lambda c, t: _pickled(c, t, "pickle"),
        ["weights.pt: expected a torch.save or .safetensors file, found a pickle file", "save_file"],
    ),
    "weights holding a foreign type": (
        lambda c, t: _pickled(c, t, "torch"),
        ["weights.pt: holds the type argparse.Namespace, outside what weights may hold", "save_file"],
    ),
}


def _corrupt(tiny_clip, tmp_path: Path) -> Path:
    path = tmp_path / "bad.safetensors"
    shutil.copy(tiny_clip["open_clip_file"]["pretrained"], path)
    _truncate(path)
    return path


@pytest.mark.parametrize("case", list(BAD))
def test_bad_checkpoint_is_one_line_before_anything_starts(case, tiny_clip, tiny_pixel_dir, tmp_path):
    make, fragments = BAD[case]
    out = tmp_path / "out"
    line = one_error_line(run_cli(zero_shot_args(make(tiny_clip, tmp_path), tiny_pixel_dir, out)), *fragments)
    assert "weights_only" not in line
    assert not (out / "mlflow.db").exists() and not (out / "reports").exists()


def test_train_refuses_a_bad_clip_config_before_mlflow_starts(tiny_pixel_dir, tmp_path):
    """Random towers whose vocabulary is smaller than the tokenizer's trained until the first step's
    index error, leaving a FAILED run; now one line before anything starts."""
    params = _arch_with(tmp_path, "text_cfg", "vocab_size", 10)
    out = tmp_path / "out"
    args = ["train", "--data", str(tiny_pixel_dir), "--model", "clip", "--loss", "infonce"]
    args += ["--set", f"model_params.arch={params['arch']}", "--output-dir", str(out)]
    one_error_line(run_cli(args), "text_cfg.vocab_size 10 is smaller than its tokenizer's vocabulary")
    assert not out.exists()


def test_region_features_are_refused_for_an_image_tower(tiny_clip, tiny_region_dir, tmp_path):
    out = tmp_path / "out"
    result = run_cli(zero_shot_args(tiny_clip["open_clip"], tiny_region_dir, out))
    one_error_line(result, "model 'clip' needs raw images", "region features")
    assert not out.exists()  # refused before the command's log starts
