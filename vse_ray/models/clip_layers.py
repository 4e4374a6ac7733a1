"""The layer groups of a CLIP model's towers, by parameter name, for layer-wise learning rates and for
locking all but the last groups of the image tower.

A tower's groups, in order: its input embeddings (with the pre-norm), one group per transformer block, the
last block with the final norm, then the projection. This is open_clip's grouping of
``VisionTransformer.lock(unlocked_groups=N)`` (LiT, Zhai et al., CVPR 2022), applied by name to both
backends: open_clip (``visual.transformer.resblocks.K``, ``transformer.resblocks.K``) and Hugging Face
(``vision_model.encoder.layers.K``, ``text_model.encoder.layers.K``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_BLOCK = re.compile(r"\.(?:resblocks|layers)\.(\d+)\.")
_FINAL_NORM = ("ln_post", "post_layernorm", "ln_final", "final_layer_norm")
_PROJECTION = ("visual.proj", "text_projection", "visual_projection")
_IMAGE = ("visual.", "vision_model.", "visual_projection")
_TEXT = (
    "text_model.",
    "text_projection",
    "token_embedding",
    "positional_embedding",
    "transformer.",
    "ln_final",
)
_LOGITS = ("logit_scale", "logit_bias")


def tower_of(name: str) -> str | None:
    """ "image", "text" or None (the logit scale and bias) for a parameter name of the towers' model."""
    if name.startswith(_LOGITS):
        return None
    if name.startswith(_IMAGE):
        return "image"
    return "text" if name.startswith(_TEXT) else None


def _group_of(name: str, blocks: int) -> int:
    found = _BLOCK.search(name)
    if found is not None:
        return min(int(found.group(1)) + 1, blocks)  # the last block shares its group with the final norm
    if any(part in name for part in _FINAL_NORM):
        return blocks
    if name.startswith(_PROJECTION):
        return blocks + 1
    return 0  # embeddings and the pre-norm


def layer_groups(names: Iterable[str]) -> dict[str, list[list[str]]]:
    """Parameter names (of the library's model) → per tower, its groups of names, first to last."""
    towers: dict[str, list[str]] = {"image": [], "text": []}
    for name in names:
        tower = tower_of(name)
        if tower is not None:
            towers[tower].append(name)
    out: dict[str, list[list[str]]] = {}
    for tower, members in towers.items():
        blocks = 1 + max((int(m.group(1)) for n in members if (m := _BLOCK.search(n))), default=-1)
        groups: list[list[str]] = [[] for _ in range(blocks + 2)]
        for name in members:
            groups[_group_of(name, blocks)].append(name)
        out[tower] = [g for g in groups if g]
    return out
