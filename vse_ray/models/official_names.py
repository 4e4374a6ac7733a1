"""Parameter names of the authors' released VSE∞ code (github.com/woodfrog/vse_infty, BiGRU branch) read as
vse_ray's :class:`~vse_ray.models.vse_inf.VSEInfModel` state-dict keys.

The released model saves two state dicts, the image encoder's (``img_enc``) and the text encoder's
(``txt_enc``). Its two-layer MLP holds its linear layers in ``mlp.layers`` and BatchNorms in ``mlp.bns``;
vse_ray's is one ``nn.Sequential`` (Linear, BatchNorm, ReLU, Linear). Its GPO is ``gpool``.
"""

from __future__ import annotations

VSE_INF_SIDES = {"img_enc": "image_encoder", "txt_enc": "text_encoder"}
# (official prefix, vse_ray prefix) inside one side's state dict; other names are the same in both.
_VSE_INF_PREFIXES = (
    ("gpool.", "gpo."),
    ("mlp.layers.0.", "mlp.0."),
    ("mlp.bns.0.", "mlp.1."),
    ("mlp.layers.1.", "mlp.3."),
)
# The released MLP builds a BatchNorm after its last layer too, but its forward never calls it.
VSE_INF_UNUSED = ("mlp.bns.1.",)


def vse_inf_name(side: str, name: str) -> str | None:
    """The vse_ray key of parameter `name` of the released `side` ("img_enc" or "txt_enc") state dict;
    None for a tensor the released forward never reads."""
    if side == "img_enc" and name.startswith(VSE_INF_UNUSED):
        return None
    for official, ours in _VSE_INF_PREFIXES:
        if name.startswith(official):
            name = ours + name.removeprefix(official)
            break
    return f"{VSE_INF_SIDES[side]}.{name}"


def vse_inf_official_name(key: str) -> tuple[str, str]:
    """(side, released name) of a VSEInfModel state-dict key: the inverse of :func:`vse_inf_name`."""
    ours_side, name = key.split(".", 1)
    side = next(theirs for theirs, ours in VSE_INF_SIDES.items() if ours == ours_side)
    for official, ours in _VSE_INF_PREFIXES:
        if name.startswith(ours):
            return side, official + name.removeprefix(ours)
    return side, name
