"""Structural similarity of two scene descriptions: the ground-truth graded relevance of the synthetic data.

A scene is encoded as a fixed-width float vector (its *descriptor*, built by
:func:`vse_ray.data.synthetic.scene.scene_descriptor`)::

    [background, texture, slot_1, ..., slot_G]      slot = [present, shape, colour, size, position, count]

where every attribute is a category index (``count`` the number of objects) and an empty slot has
``present = 0``. The similarity of scenes a and b is

    S(a, b) = W_OBJECTS * M(a, b) + W_BACKGROUND * [bg_a = bg_b] + W_TEXTURE * [tex_a = tex_b]

    M(a, b) = max over one-to-one matchings π of a's groups to b's groups of
              Σ_{(u, v) in π} g(u, v) / max(n_a, n_b)

    g(u, v) = [shape_u = shape_v] * (1 + [colour_u = colour_v] + [size_u = size_v]
                                      + [position_u = position_v] + [count_u = count_v]) / 5

with n_a, n_b the numbers of object groups and ``shape`` the kind of object (ball, car, tree, ...). Two groups
only match when they are the same kind of object (a red car and a red tree share a colour, not an object);
then each further attribute they share adds 1/5. S is in [0, 1], symmetric, 1 for identical descriptions
(the same groups in any order) and 0 for scenes with different backgrounds and textures and no object kind in
common; a group left unmatched (one scene has more groups) contributes 0, so extra or missing objects lower
the score.
"""

from __future__ import annotations

import itertools

import torch
from torch import Tensor

SCENE_FIELDS = ("background", "texture")
GROUP_FIELDS = ("shape", "colour", "size", "position", "count")
SLOT_WIDTH = 1 + len(GROUP_FIELDS)
W_OBJECTS, W_BACKGROUND, W_TEXTURE = 0.8, 0.1, 0.1


def _slots(descriptors: Tensor) -> tuple[Tensor, Tensor]:
    """(n, G) presence and (n, G, len(GROUP_FIELDS)) attributes of (n, D) descriptors."""
    n, width = descriptors.shape
    groups = width - len(SCENE_FIELDS)
    if groups < SLOT_WIDTH or groups % SLOT_WIDTH:
        raise ValueError(
            f"scene descriptors must have {len(SCENE_FIELDS)} + G * {SLOT_WIDTH} columns, got {width}"
        )
    slots = descriptors[:, len(SCENE_FIELDS) :].reshape(n, groups // SLOT_WIDTH, SLOT_WIDTH)
    return slots[..., 0] > 0, slots[..., 1:]


def scene_similarity(a: Tensor, b: Tensor) -> Tensor:
    """S(a_i, b_j) for every row pair of two descriptor matrices (module docstring); (n, m) float32.

    Vectorised over pairs: the group-to-group scores g form an (n, m, G, G) tensor and the best one-to-one
    matching is the maximum over the G! slot permutations (G <= 4 in practice: at most 24).

    Args:
        a: (n, D) descriptors.
        b: (m, D) descriptors of the same width.
    """
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise ValueError(
            f"scene descriptors must be (n, D) and (m, D), got {tuple(a.shape)} and {tuple(b.shape)}"
        )
    present_a, attrs_a = _slots(a)
    present_b, attrs_b = _slots(b)
    n_groups = present_a.shape[1]
    equal = (attrs_a[:, None, :, None, :] == attrs_b[None, :, None, :, :]).float()
    group = equal.mean(-1) * equal[..., 0]  # kind-gated: attributes count only between same-kind groups
    group = group * (present_a[:, None, :, None] & present_b[None, :, None, :])
    perms = torch.tensor(list(itertools.permutations(range(n_groups))), device=a.device)
    # matched[i, j, p] = Σ_s g[i, j, s, perms[p, s]]
    matched = group[:, :, torch.arange(n_groups, device=a.device), perms].sum(-1)
    sizes = torch.maximum(present_a.sum(1)[:, None], present_b.sum(1)[None, :]).clamp(min=1)
    objects = matched.max(-1).values / sizes
    background = (a[:, None, 0] == b[None, :, 0]).float()
    texture = (a[:, None, 1] == b[None, :, 1]).float()
    return (W_OBJECTS * objects + W_BACKGROUND * background + W_TEXTURE * texture).float()
