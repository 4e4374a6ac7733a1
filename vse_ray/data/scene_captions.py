"""Captions written from a :class:`~vse_ray.data.scene.Scene` alone: every caption names every object.

Each caption names every object group by its colour and kind (with its number when there are several), so
the captions of one image share their meaning and captions of different images share as much meaning as
their scenes share objects. What varies between the captions of an image is the wording: synonyms, group
order, sentence structure, and which *extra* visible facts are added - sizes, positions, the spatial
relation between two groups (read from their positions), the background. Every fact a caption states is
drawn in the pixels (:func:`vse_ray.data.synthetic.render_scene`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from vse_ray.data.scene import ObjectGroup, Scene

_KIND_WORDS = {
    "ball": (("ball", "balls"), ("disc", "discs")),
    "box": (("box", "boxes"), ("crate", "crates")),
    "tree": (("tree", "trees"), ("pine tree", "pine trees")),
    "house": (("house", "houses"), ("cottage", "cottages")),
    "car": (("car", "cars"), ("toy car", "toy cars")),
    "boat": (("boat", "boats"), ("sailboat", "sailboats")),
    "fish": (("fish", "fish"),),
    "flower": (("flower", "flowers"), ("blossom", "blossoms")),
    "star": (("star", "stars"),),
    "heart": (("heart", "hearts"),),
    "umbrella": (("umbrella", "umbrellas"),),
    "mushroom": (("mushroom", "mushrooms"),),
    "kite": (("kite", "kites"),),
}
_COLOUR_WORDS = {
    "red": ("red", "crimson"),
    "green": ("green",),
    "blue": ("blue",),
    "yellow": ("yellow",),
    "purple": ("purple", "violet"),
    "orange": ("orange",),
    "pink": ("pink",),
    "cyan": ("cyan", "turquoise"),
}
_SIZE_WORDS = {
    "small": ("small", "little", "tiny"),
    "medium": ("medium-sized",),
    "large": ("large", "big"),
}
_COUNT_WORDS = {2: ("two", "a pair of"), 3: ("three",), 4: ("four",)}
_POSITION_WORDS = {
    "left": ("on the left", "at the left"),
    "right": ("on the right", "at the right"),
    "top": ("at the top", "near the top"),
    "bottom": ("at the bottom", "near the bottom"),
    "center": ("in the center", "in the middle"),
}
_CENTRES = {"left": (0, 1), "right": (2, 1), "top": (1, 0), "bottom": (1, 2), "center": (1, 1)}
_TEXTURE_WORDS = {
    "plain": ("plain",),
    "striped": ("striped",),
    "checkered": ("checkered", "checked"),
    "dotted": ("dotted", "spotted"),
}


def _pick(rng: np.random.Generator, options: tuple[str, ...]) -> str:
    return options[rng.integers(len(options))]


def _with_article(phrase: str) -> str:
    return ("an " if phrase[0] in "aeiou" else "a ") + phrase


def _join(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _objects(group: ObjectGroup, rng: np.random.Generator, size_p: float = 0.3) -> str:
    """Noun phrase of a group: ``"a red car"``, ``"two small blue boats"``."""
    singular, plural = _KIND_WORDS[group.shape][rng.integers(len(_KIND_WORDS[group.shape]))]
    words = [_pick(rng, _SIZE_WORDS[group.size])] if rng.random() < size_p else []
    words += [_pick(rng, _COLOUR_WORDS[group.colour]), singular if group.count == 1 else plural]
    phrase = " ".join(words)
    return _with_article(phrase) if group.count == 1 else f"{_pick(rng, _COUNT_WORDS[group.count])} {phrase}"


def _relation(a: ObjectGroup, b: ObjectGroup) -> str:
    """Where group a is relative to group b, read from their positions (both are drawn there)."""
    (ax, ay), (bx, by) = _CENTRES[a.position], _CENTRES[b.position]
    if ax != bx and abs(ax - bx) >= abs(ay - by):
        return "to the left of" if ax < bx else "to the right of"
    return "above" if ay < by else "below"


def _background(scene: Scene, rng: np.random.Generator) -> str:
    texture = (
        _pick(rng, _TEXTURE_WORDS[scene.texture]) if scene.texture != "plain" or rng.random() < 0.5 else ""
    )
    return " ".join(w for w in (texture, scene.background, _pick(rng, ("background", "backdrop"))) if w)


def _on(text: str, scene: Scene, rng: np.random.Generator, p: float) -> str:
    """``text`` followed by "on a <background>" with probability ``p``."""
    return f"{text} on {_with_article(_background(scene, rng))}" if rng.random() < p else text


def _shuffled(scene: Scene, rng: np.random.Generator) -> list[ObjectGroup]:
    return [scene.groups[i] for i in rng.permutation(len(scene.groups))]


def _listed(scene: Scene, rng: np.random.Generator) -> str:
    return _join([_objects(g, rng) for g in _shuffled(scene, rng)])


def _placed(scene: Scene, rng: np.random.Generator) -> str:
    return _on(_placed_groups(scene, rng), scene, rng, 0.8)


def _placed_groups(scene: Scene, rng: np.random.Generator) -> str:
    return _join(
        [f"{_objects(g, rng)} {_pick(rng, _POSITION_WORDS[g.position])}" for g in _shuffled(scene, rng)]
    )


def _related(scene: Scene, rng: np.random.Generator) -> str:
    groups = _shuffled(scene, rng)
    if len(groups) == 1:
        return f"{_objects(groups[0], rng)} {_pick(rng, _POSITION_WORDS[groups[0].position])}"
    first, second, *rest = groups
    parts = [f"{_objects(first, rng)} {_relation(first, second)} {_objects(second, rng)}"]
    parts += [f"{_objects(g, rng)} {_pick(rng, _POSITION_WORDS[g.position])}" for g in rest]
    return _on(_join(parts), scene, rng, 0.8)


def _on_background(scene: Scene, rng: np.random.Generator) -> str:
    return f"{_listed(scene, rng)} on {_with_article(_background(scene, rng))}"


def _positions_first(scene: Scene, rng: np.random.Generator) -> str:
    groups = _join(
        [f"{_pick(rng, _POSITION_WORDS[g.position])} {_objects(g, rng)}" for g in _shuffled(scene, rng)]
    )
    return _on(groups, scene, rng, 0.8)


def _sizes(scene: Scene, rng: np.random.Generator) -> str:
    return _on(_join([_objects(g, rng, size_p=1.0) for g in _shuffled(scene, rng)]), scene, rng, 0.8)


TEMPLATES: tuple[Callable[[Scene, np.random.Generator], str], ...] = (
    _listed,
    _placed,
    _related,
    _on_background,
    _positions_first,
    _sizes,
)


def describe_scene(scene: Scene, rng: np.random.Generator, n_captions: int = 5) -> list[str]:
    """Write ``n_captions`` different captions of ``scene`` from distinct templates.

    Args:
        scene: The scene to describe.
        rng: The generator; the same state gives the same captions.
        n_captions: How many captions (at most ``len(TEMPLATES)``).

    Returns:
        Lower-case captions, pairwise different.
    """
    if not 1 <= n_captions <= len(TEMPLATES):
        raise ValueError(f"n_captions must be in 1..{len(TEMPLATES)}, got {n_captions}")
    captions: list[str] = []
    for _ in range(20):
        for index in rng.permutation(len(TEMPLATES)):
            caption = TEMPLATES[index](scene, rng)
            if caption not in captions:
                captions.append(caption)
            if len(captions) == n_captions:
                return captions
    raise RuntimeError(f"could not write {n_captions} different captions for {scene}")  # pragma: no cover
