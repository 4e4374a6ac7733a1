"""Parameter names of the official VSRN code (KunpengLi1994/VSRN) read as vse_ray's VSRNModel keys."""

from __future__ import annotations

import re

_PREFIXES = (
    ("img_enc.img_rnn.", "image_encoder.rnn."),
    ("img_enc.", "image_encoder."),
    ("txt_enc.", "text_encoder."),
    ("caption_model.encoder.vid2hid.", "captioner.region_fc."),
    ("caption_model.encoder.rnn.", "captioner.region_rnn."),
    ("caption_model.decoder.embedding.", "captioner.embed."),
    ("caption_model.decoder.attention.linear1.", "captioner.attend."),
    ("caption_model.decoder.attention.linear2.", "captioner.attend_score."),
    ("caption_model.decoder.", "captioner."),
)
# Rs_GCN_k's modules in vse_ray's RegionGraphReasoning (k from 1): W = Sequential(conv, BatchNorm).
_GCN_PARTS = {"g": "g", "theta": "theta", "phi": "phi", "W.0": "out", "W.1": "bn"}


def vsrn_name(name: str) -> str:
    """The VSRNModel state-dict key of official parameter `name` (``img_enc.`` / ``txt_enc.`` /
    ``caption_model.`` + the module's own name)."""
    gcn = re.match(r"img_enc\.Rs_GCN_(\d)\.(g|theta|phi|W\.0|W\.1)\.(.+)", name)
    if gcn:
        layer, part, rest = gcn.groups()
        return f"image_encoder.reasoning.{int(layer) - 1}.{_GCN_PARTS[part]}.{rest}"
    for official, ours in _PREFIXES:
        if name.startswith(official):
            return ours + name.removeprefix(official)
    raise KeyError(name)
