"""Scene descriptions of the embedded synthetic dataset: which objects, where, on what background.

A scene is the single source of truth of a synthetic image: the pixels are rendered from it
(:func:`vse_ray.data.synthetic.dataset.render_scene`) and the captions are written from it
(:func:`vse_ray.data.synthetic.scene_captions.describe_scene`); neither ever sees the other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Object kinds, each drawn as its own pictogram (:mod:`vse_ray.data.synthetic.dataset`); a group's ``shape``.
SHAPES = (
    "ball",
    "box",
    "tree",
    "house",
    "car",
    "boat",
    "fish",
    "flower",
    "star",
    "heart",
    "umbrella",
    "mushroom",
    "kite",
)
COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (220, 30, 30),
    "green": (30, 180, 40),
    "blue": (30, 70, 230),
    "yellow": (250, 220, 20),
    "purple": (140, 40, 200),
    "orange": (250, 130, 10),
    "pink": (250, 110, 190),
    "cyan": (20, 210, 220),
}
SIZES = ("small", "medium", "large")
POSITIONS = ("left", "right", "top", "bottom", "center")
BACKGROUNDS: dict[str, tuple[int, int, int]] = {
    "gray": (128, 128, 128),
    "black": (20, 20, 20),
    "white": (238, 238, 238),
    "brown": (110, 75, 45),
}
TEXTURES = ("plain", "striped", "checkered", "dotted")
MAX_OBJECTS = 4
MAX_GROUPS = 3


@dataclass(frozen=True)
class ObjectGroup:
    """``count`` identical objects (same kind - ``shape`` -, colour and size) clustered at one position."""

    shape: str
    colour: str
    size: str
    position: str
    count: int


@dataclass(frozen=True)
class Scene:
    """A background (colour and texture) and 1-3 object groups at distinct positions, 1-4 objects in all."""

    background: str
    texture: str
    groups: tuple[ObjectGroup, ...]

    @property
    def n_objects(self) -> int:
        return sum(group.count for group in self.groups)


def scene_descriptor(scene: Scene) -> np.ndarray:
    """The (D,) float32 descriptor of ``scene`` read by :func:`vse_ray.relevance.scene.scene_similarity`.

    ``[background, texture]`` indices, then :data:`MAX_GROUPS` slots ``[1, shape, colour, size, position,
    count]`` in the scene's group order; unused slots are ``[0, -1, -1, -1, -1, 0]``.
    """
    values = [list(BACKGROUNDS).index(scene.background), TEXTURES.index(scene.texture)]
    for group in scene.groups:
        values += [
            1,
            SHAPES.index(group.shape),
            list(COLOURS).index(group.colour),
            SIZES.index(group.size),
            POSITIONS.index(group.position),
            group.count,
        ]
    values += [0, -1, -1, -1, -1, 0] * (MAX_GROUPS - len(scene.groups))
    return np.asarray(values, dtype=np.float32)


def sample_scene(rng: np.random.Generator) -> Scene:
    """Draw a scene uniformly over the attribute grid.

    The number of groups is uniform in 1..3; group counts are drawn so the scene holds at most
    :data:`MAX_OBJECTS` objects; positions are distinct so groups never overlap, and so are the kinds of
    the groups of one scene.

    Args:
        rng: The generator; the same state always gives the same scene.
    """
    n_groups = int(rng.integers(1, MAX_GROUPS + 1))
    positions = rng.choice(len(POSITIONS), size=n_groups, replace=False)
    kinds = rng.choice(len(SHAPES), size=n_groups, replace=False)
    budget = MAX_OBJECTS - n_groups
    groups = []
    for pos, kind in zip(positions, kinds, strict=True):
        extra = int(rng.integers(0, budget + 1)) if rng.random() < 0.4 else 0
        budget -= extra
        groups.append(
            ObjectGroup(
                shape=SHAPES[kind],
                colour=list(COLOURS)[rng.integers(len(COLOURS))],
                size=SIZES[rng.integers(len(SIZES))],
                position=POSITIONS[pos],
                count=1 + extra,
            )
        )
    return Scene(
        background=list(BACKGROUNDS)[rng.integers(len(BACKGROUNDS))],
        texture=TEXTURES[rng.integers(len(TEXTURES))],
        groups=tuple(groups),
    )
