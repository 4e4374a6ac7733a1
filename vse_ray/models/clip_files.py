"""Where a CLIP checkpoint's files are, checked without importing open_clip or transformers (they cost
seconds): offline always, so a hub tag or a missing file stops with one line saying what to provide.

``model_params`` of model "clip":

- ``backend: open_clip``: ``arch`` is an open_clip architecture name (``ViT-B-32``) or a model config JSON
  in open_clip's format (``embed_dim``, ``vision_cfg``, ``text_cfg``; a bare file name not found as a file
  names one shipped in ``resources/clip_archs/``: ``clip-tiny.json``, the random tiny towers of the study
  protocol on the embedded data); ``pretrained`` is a weights file
  (``.safetensors``, ``.bin``, ``.pt``, ``.pth``), a folder in open_clip's ``local-dir:`` layout
  (``open_clip_config.json`` beside the weights; then ``arch`` stays empty), or empty: random towers.
- ``backend: hf``: ``pretrained`` is a folder written by Hugging Face ``save_pretrained`` of a ``CLIPModel``
  or ``SiglipModel`` with its processor (``config.json``, the weights, ``preprocessor_config.json`` and the
  tokenizer's files).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from vse_ray.resources import RESOURCE_ROOT

BACKENDS = ("open_clip", "hf")
HF_MODEL_TYPES = ("clip", "siglip")
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
# open_clip's own order of preference for the weights of a local-dir folder
LOCAL_DIR_WEIGHTS = (
    "open_clip_model.safetensors",
    "open_clip_pytorch_model.safetensors",
    "open_clip_pytorch_model.bin",
    "open_clip_pytorch_model.pth",
    "model.safetensors",
    "pytorch_model.bin",
    "pytorch_model.pth",
    "model.pth",
)
LOCAL_DIR_CONFIG = "open_clip_config.json"
SHIPPED_ARCHS = RESOURCE_ROOT / "clip_archs"  # config JSONs shipped with vse_ray, by file name
HF_FILES = ("config.json", "preprocessor_config.json", "tokenizer_config.json")
HF_WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")

OPEN_CLIP_HOW = (
    "nothing is downloaded: give model_params.pretrained a local weights file (with model_params.arch) or a "
    f"folder in open_clip's local-dir layout ({LOCAL_DIR_CONFIG} and open_clip_model.safetensors, as "
    "`hf download <hf-hub repo> --local-dir FOLDER` writes it)"
)
HF_HOW = (
    "nothing is downloaded: write the folder once where the hub can be reached, with "
    "`CLIPModel.from_pretrained(NAME).save_pretrained(FOLDER)` (SiglipModel for SigLIP) and "
    "`AutoProcessor.from_pretrained(NAME).save_pretrained(FOLDER)`, and give model_params.pretrained FOLDER"
)


@dataclass(frozen=True)
class ClipSource:
    """A checked checkpoint: `backend`, the open_clip `arch` (name or config JSON; "" for a folder),
    `weights` (the file to load; None: random towers) and `folder` (local-dir or save_pretrained; or None)."""

    backend: str
    arch: str
    weights: Path | None
    folder: Path | None

    @property
    def hf_model_type(self) -> str:
        """``model_type`` of a Hugging Face folder's config.json ("clip" or "siglip")."""
        assert self.folder is not None
        return str(_read_json(self.folder / "config.json").get("model_type"))


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ValueError(f"{path}: not a readable JSON file ({err})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return data


def _looks_like_hub(value: str) -> bool:
    """A name the hub would resolve: ``hf-hub:...``, a pretrained tag (``openai``) or ``org/name``."""
    if value.startswith("hf-hub:"):
        return True
    path = Path(value).expanduser()
    return not path.is_absolute() and not value.startswith(".") and path.suffix not in WEIGHT_SUFFIXES


def shipped_arch(arch: str) -> str:
    """`arch`, or the path of the config JSON shipped under that bare file name when no such file is here."""
    shipped = SHIPPED_ARCHS / arch
    if arch.endswith(".json") and Path(arch).name == arch and not Path(arch).is_file() and shipped.is_file():
        return str(shipped)
    return arch


def check_clip_source(backend: str = "open_clip", arch: str = "", pretrained: str = "") -> ClipSource:
    """The checked files of a CLIP checkpoint; FileNotFoundError (a file to provide, and how) or ValueError
    (a hub name, an option that does not fit), each one line naming the model_params key."""
    if backend not in BACKENDS:
        raise ValueError(f"model_params.backend: must be one of {BACKENDS}, got {backend!r}")
    if backend == "hf":
        return ClipSource(backend, "", None, _hf_folder(arch, pretrained))
    if arch.startswith("hf-hub:") or arch.startswith("local-dir:"):
        raise ValueError(f"model_params.arch {arch!r}: an architecture name or config JSON; {OPEN_CLIP_HOW}")
    arch = shipped_arch(arch)
    if arch.endswith(".json") and not Path(arch).expanduser().is_file():
        raise FileNotFoundError(f"model_params.arch {arch}: no such config JSON (open_clip's format)")
    path = Path(pretrained).expanduser()
    if not pretrained:
        if not arch:
            raise ValueError("model_params.arch: an open_clip architecture or config JSON is needed")
        return ClipSource(backend, arch, None, None)
    if path.is_dir():
        if arch:
            raise ValueError(
                f"model_params.arch {arch!r}: leave it empty, the folder {path} holds its {LOCAL_DIR_CONFIG}"
            )
        if not (path / LOCAL_DIR_CONFIG).is_file():
            raise FileNotFoundError(f"model_params.pretrained {path}: no {LOCAL_DIR_CONFIG}; {OPEN_CLIP_HOW}")
        return ClipSource(backend, "", _local_dir_weights(path), path)
    if path.is_file():
        if not arch:
            raise ValueError(
                f"model_params.arch: needed with the weights file {path} (an architecture or config JSON)"
            )
        return ClipSource(backend, arch, path, None)
    if _looks_like_hub(pretrained):
        raise ValueError(
            f"model_params.pretrained {pretrained!r} is a hub tag, not a local file; {OPEN_CLIP_HOW}"
        )
    raise FileNotFoundError(f"model_params.pretrained {path}: no such file or folder; {OPEN_CLIP_HOW}")


def _local_dir_weights(folder: Path) -> Path:
    for name in LOCAL_DIR_WEIGHTS:
        if (folder / name).is_file():
            return folder / name
    found = sorted(p for p in folder.iterdir() if p.suffix in WEIGHT_SUFFIXES)
    if not found:
        raise FileNotFoundError(
            f"model_params.pretrained {folder}: no weights (open_clip_model.safetensors); {OPEN_CLIP_HOW}"
        )
    return found[0]


def hf_weights(folder: Path) -> Path:
    """The weights file of a save_pretrained folder (its index when sharded); FileNotFoundError if none."""
    for name in HF_WEIGHTS:
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(f"model_params.pretrained {folder}: no {HF_WEIGHTS[0]}; {HF_HOW}")


def _hf_folder(arch: str, pretrained: str) -> Path:
    if arch:
        raise ValueError(f"model_params.arch {arch!r}: backend hf reads the architecture from its folder")
    path = Path(pretrained).expanduser()
    if not pretrained:
        raise ValueError(f"model_params.pretrained: backend hf needs a save_pretrained folder; {HF_HOW}")
    if not path.is_dir():
        if path.exists() or not _looks_like_hub(pretrained):
            raise FileNotFoundError(f"model_params.pretrained {path}: no such folder; {HF_HOW}")
        raise ValueError(
            f"model_params.pretrained {pretrained!r} is a hub name, not a local folder; {HF_HOW}"
        )
    for name in HF_FILES:
        if not (path / name).is_file():
            raise FileNotFoundError(f"model_params.pretrained {path}: no {name}; {HF_HOW}")
    hf_weights(path)
    model_type = _read_json(path / "config.json").get("model_type")
    if model_type not in HF_MODEL_TYPES:
        raise ValueError(
            f"{path / 'config.json'}: model_type {model_type!r}, expected one of {HF_MODEL_TYPES}"
        )
    return path
