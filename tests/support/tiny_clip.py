"""Tiny random CLIP towers written as a user provides them: an open_clip ``local-dir:`` folder (config JSON of
2 layers, width 64, image 32, context 16, and its weights) and Hugging Face ``save_pretrained`` folders of a
``CLIPModel`` and a ``SiglipModel`` (vocabulary 1,000, a character-level CLIP tokenizer, the processor)."""

from __future__ import annotations

import json
import string
from pathlib import Path

IMAGE, CONTEXT, WIDTH, EMBED = 32, 16, 64, 32

OPEN_CLIP_CFG = {
    "embed_dim": EMBED,
    "vision_cfg": {"image_size": IMAGE, "layers": 2, "width": WIDTH, "patch_size": 8, "head_width": 32},
    "text_cfg": {"context_length": CONTEXT, "vocab_size": 49408, "width": WIDTH, "heads": 2, "layers": 2},
}


def write_open_clip_arch(path: Path) -> Path:
    """open_clip's model config JSON of the tiny towers (the format of its ``model_configs/``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(OPEN_CLIP_CFG))
    return path


def write_open_clip_folder(folder: Path, seed: int = 0) -> Path:
    """A local-dir folder: ``open_clip_config.json`` (model and preprocess config) and
    ``open_clip_model.safetensors`` of randomly initialised towers."""
    import open_clip
    import torch
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "model_cfg": OPEN_CLIP_CFG,
        "preprocess_cfg": {"mean": [0.5, 0.4, 0.3], "std": [0.2, 0.3, 0.25]},
    }
    (folder / "open_clip_config.json").write_text(json.dumps(config))
    torch.manual_seed(seed)
    model = open_clip.create_model(f"local-dir:{folder}", load_weights=False)
    save_file(
        {k: v.contiguous() for k, v in model.state_dict().items()},
        str(folder / "open_clip_model.safetensors"),
    )
    return folder


def _clip_vocab() -> dict[str, int]:
    chars = [c for c in string.printable if c.strip()]
    vocab = {c: i for i, c in enumerate(chars)}
    vocab.update({c + "</w>": len(chars) + i for i, c in enumerate(chars)})
    return vocab | {"<|startoftext|>": len(vocab), "<|endoftext|>": len(vocab) + 1}


def write_hf_folder(folder: Path, kind: str = "clip", seed: int = 0) -> Path:
    """A save_pretrained folder of a tiny random ``CLIPModel`` (`kind` "clip") or ``SiglipModel``
    ("siglip"), with a character-level CLIP tokenizer (SigLIP's: ids only, padded to the context) and
    the processor's preprocessor_config.json (CLIP: shortest edge and centre crop; SigLIP: squash)."""
    import torch
    from transformers import (
        CLIPConfig,
        CLIPImageProcessor,
        CLIPModel,
        CLIPTokenizer,
        SiglipConfig,
        SiglipImageProcessor,
        SiglipModel,
    )

    folder.mkdir(parents=True, exist_ok=True)
    vocab = _clip_vocab()
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    names = ["input_ids", "attention_mask"] if kind == "clip" else ["input_ids"]
    tokenizer = CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"), model_input_names=names)
    bos, eos = vocab["<|startoftext|>"], vocab["<|endoftext|>"]
    text = {
        "vocab_size": 1000,
        "hidden_size": WIDTH,
        "intermediate_size": 2 * WIDTH,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "max_position_embeddings": CONTEXT,
        "bos_token_id": bos,
        "eos_token_id": eos,
        "pad_token_id": eos,
    }
    vision = {
        k: text[k] for k in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads")
    }
    vision |= {"image_size": IMAGE, "patch_size": 8}
    torch.manual_seed(seed)
    if kind == "clip":
        model = CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=EMBED))
        processor = CLIPImageProcessor(
            size={"shortest_edge": IMAGE}, crop_size={"height": IMAGE, "width": IMAGE}
        )
    else:
        model = SiglipModel(SiglipConfig(text_config=text, vision_config=vision))
        processor = SiglipImageProcessor(size={"height": IMAGE, "width": IMAGE})
    model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    processor.save_pretrained(str(folder))
    return folder
