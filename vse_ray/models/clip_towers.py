"""The two towers of a CLIP checkpoint, loaded offline with the library that wrote it, behind one interface.

- :class:`OpenClipTowers`: open_clip's ``create_model`` of an architecture (a built-in name, a config JSON
  registered with ``add_model_config``, or a ``local-dir:`` folder's config), its weights loaded with
  ``open_clip.load_checkpoint`` (strict); images through ``encode_image``, captions through ``encode_text`` of
  the rows its tokenizer gives (the context length, padded as the library pads).
- :class:`HFTowers`: a ``CLIPModel`` or ``SiglipModel`` of a ``save_pretrained`` folder (every weight must
  load: no missing, unexpected or resized tensor); ``get_image_features`` / ``get_text_features``, their
  ``pooler_output``. CLIP's captions are their tokens with an attention mask of their lengths; SigLIP's are
  padded to the text tower's length and read without a mask, as SigLIP was trained (its tokenizer gives no
  mask, and its text tower pools the last position).

Both give unnormalised features; :class:`vse_ray.models.clip.ClipModel` normalises them. The library is
imported here, on first use, with the hub offline.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from vse_ray.checkpoint_files import not_torch_file, refused_type
from vse_ray.models.bert_text import quiet_transformers
from vse_ray.models.clip_config import check_model_config, check_vocabulary
from vse_ray.models.clip_files import LOCAL_DIR_CONFIG, ClipSource, hf_weights
from vse_ray.models.clip_preprocess import PixelSpec

WEIGHTS_HOW = (
    "give the state dict as a .safetensors file (`safetensors.torch.save_file(model.state_dict(), PATH)`) "
    "or a torch.save of it (tensors only)"
)


def _offline() -> None:
    """Nothing downloads (huggingface_hub reads the switch when it is first imported)."""
    os.environ["HF_HUB_OFFLINE"] = "1"


@contextmanager
def quiet_open_clip() -> Iterator[None]:
    """open_clip logs to the root logger that towers without its own weights start random: ours load next."""
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(logging.NOTSET)


def weights_error(path: Path, err: Exception) -> ValueError:
    """One line for weights that would not load: a type refused (named, with how to give weights),
    unreadable, or not those of the architecture."""
    refused = refused_type(err, f"model_params.pretrained {path}", "weights")
    if refused is not None:  # torch's advice to drop weights_only stays out
        return ValueError(f"{refused}; {WEIGHTS_HOW}")
    first = str(err).strip().splitlines()
    detail = " ".join(line.strip() for line in first[:2]) if first else type(err).__name__
    if "state_dict" in detail or "size mismatch" in detail or "Missing key" in detail:
        return ValueError(
            f"model_params.pretrained {path}: the weights do not fit the architecture ({detail})"
        )
    return ValueError(f"model_params.pretrained {path}: not a readable weights file ({detail})")


class ClipTowers(nn.Module):
    """An image tower, a text tower and the checkpoint's logit scale (log) and bias (SigLIP; else None)."""

    spec: PixelSpec

    def tokenize(self, texts: Sequence[str]) -> list[np.ndarray]:
        """The ids `encode_text` reads for each text, as the checkpoint's tokenizer gives them."""
        raise NotImplementedError

    def encode_image(self, pixels: Tensor) -> Tensor:
        """(B, 3, h, w) preprocessed images → (B, E) unnormalised features."""
        raise NotImplementedError

    def encode_text(self, ids: Tensor, lengths: Tensor) -> Tensor:
        """(B, L) ids from `tokenize`, zero-padded, and their (B,) lengths → (B, E) unnormalised features."""
        raise NotImplementedError

    def set_grad_checkpointing(self) -> None:
        """Recompute each transformer block in backward (activation checkpointing)."""
        raise NotImplementedError

    @property
    def logit_scale(self) -> nn.Parameter:
        raise NotImplementedError

    @property
    def logit_bias(self) -> nn.Parameter | None:
        raise NotImplementedError


class OpenClipTowers(ClipTowers):
    """An open_clip model (`source.backend` "open_clip")."""

    def __init__(self, source: ClipSource):
        super().__init__()
        _offline()
        import open_clip

        config = _model_config(source)  # checked before anything is built
        if source.folder is not None:
            name = f"local-dir:{source.folder}"
        elif source.arch.endswith(".json"):
            open_clip.add_model_config(str(Path(source.arch).expanduser()))
            name = Path(source.arch).stem
        else:
            if source.arch not in open_clip.list_models():
                raise ValueError(
                    f"model_params.arch {source.arch!r}: not an open_clip architecture "
                    "(`open_clip.list_models()`) nor a config JSON"
                )
            name = source.arch
        self.tokenizer = open_clip.get_tokenizer(name)
        if config is not None:
            check_vocabulary(config[0], self.tokenizer, config[1])
        # pretrained_hf=False: a config with a Hugging Face text tower would otherwise fetch its weights
        with quiet_open_clip():
            self.model = open_clip.create_model(name, load_weights=False, pretrained_hf=False)
        if source.weights is not None:
            problem = None if source.weights.suffix == ".safetensors" else not_torch_file(source.weights)
            if problem:  # a pickle.dump file: refused before torch reads it
                raise ValueError(
                    f"model_params.pretrained {source.weights}: expected a torch.save or .safetensors file, "
                    f"found {problem}; {WEIGHTS_HOW}"
                )
            try:
                open_clip.load_checkpoint(self.model, str(source.weights))
            except Exception as err:  # the library raises what torch, safetensors or pickle raise
                raise weights_error(source.weights, err) from err
        self.spec = PixelSpec.from_open_clip(self.model.visual.preprocess_cfg, name)

    def tokenize(self, texts: Sequence[str]) -> list[np.ndarray]:
        return list(self.tokenizer(list(texts)).numpy().astype(np.int64))

    def encode_image(self, pixels: Tensor) -> Tensor:
        return self.model.encode_image(pixels)

    def encode_text(self, ids: Tensor, lengths: Tensor) -> Tensor:
        return self.model.encode_text(ids)

    def set_grad_checkpointing(self) -> None:
        self.model.set_grad_checkpointing(True)

    @property
    def logit_scale(self) -> nn.Parameter:
        return self.model.logit_scale

    @property
    def logit_bias(self) -> nn.Parameter | None:
        return self.model.logit_bias


def _model_config(source: ClipSource) -> tuple[dict[str, Any], str] | None:
    """The model config of a config JSON or a local-dir folder, checked (`check_model_config`), with how
    messages name it; None for an architecture of open_clip's own."""
    if source.folder is not None:
        path = source.folder / LOCAL_DIR_CONFIG
        where = f"model_params.pretrained {path} model_cfg"
        config = _read_json(path, where).get("model_cfg")
    elif source.arch.endswith(".json"):
        path = Path(source.arch).expanduser()
        where = f"model_params.arch {path}"
        config = _read_json(path, where)
    else:
        return None
    check_model_config(config, where)
    return config, where


def _read_json(path: Path, where: str) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ValueError(f"{where}: not a readable JSON file ({err})") from None


class HFTowers(ClipTowers):
    """A Hugging Face CLIPModel or SiglipModel folder (`source.backend` "hf")."""

    def __init__(self, source: ClipSource):
        super().__init__()
        assert source.folder is not None
        _offline()
        from transformers import AutoTokenizer, CLIPModel, SiglipModel

        folder = source.folder
        model_class: Any = {"clip": CLIPModel, "siglip": SiglipModel}[source.hf_model_type]
        try:
            with quiet_transformers():
                # resized tensors are reported below, by name, rather than raised without one
                model, info = model_class.from_pretrained(
                    str(folder), local_files_only=True, output_loading_info=True, ignore_mismatched_sizes=True
                )
        except Exception as err:
            raise weights_error(hf_weights(folder), err) from err
        wrong = [(key, info.get(key)) for key in ("missing_keys", "unexpected_keys", "mismatched_keys")]
        wrong = [(key, names) for key, names in wrong if names]
        if wrong:
            key, names = wrong[0]
            first = sorted(names, key=str)[0]  # a name, or (name, shape in the file, shape by the config)
            if isinstance(first, tuple):
                first = f"{first[0]} {tuple(first[1])} in the file, {tuple(first[2])} by the config"
            raise ValueError(
                f"model_params.pretrained {folder}: the weights do not fit its config.json "
                f"({key.replace('_', ' ')}: {first}, {len(names)} in all)"
            )
        self.model = model
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        self.masked = "attention_mask" in self.tokenizer.model_input_names
        self.context = int(model.config.text_config.max_position_embeddings)
        self.spec = PixelSpec.from_hf(
            json.loads((folder / "preprocessor_config.json").read_text()),
            str(folder / "preprocessor_config.json"),
        )

    def tokenize(self, texts: Sequence[str]) -> list[np.ndarray]:
        padding = False if self.masked else "max_length"
        ids = self.tokenizer(list(texts), padding=padding, truncation=True, max_length=self.context)[
            "input_ids"
        ]
        return [np.asarray(row, dtype=np.int64) for row in ids]

    def encode_image(self, pixels: Tensor) -> Tensor:
        return self.model.get_image_features(pixel_values=pixels).pooler_output

    def encode_text(self, ids: Tensor, lengths: Tensor) -> Tensor:
        if not self.masked:
            return self.model.get_text_features(input_ids=ids).pooler_output
        mask = torch.arange(ids.shape[1], device=ids.device)[None, :] < lengths.to(ids.device)[:, None]
        return self.model.get_text_features(input_ids=ids, attention_mask=mask.long()).pooler_output

    def set_grad_checkpointing(self) -> None:
        self.model.activation_checkpointing_enable()

    @property
    def logit_scale(self) -> nn.Parameter:
        return self.model.logit_scale

    @property
    def logit_bias(self) -> nn.Parameter | None:
        return getattr(self.model, "logit_bias", None)


def load_towers(source: ClipSource) -> ClipTowers:
    """The towers of a checked checkpoint (`vse_ray.models.clip_files.check_clip_source`)."""
    return OpenClipTowers(source) if source.backend == "open_clip" else HFTowers(source)
