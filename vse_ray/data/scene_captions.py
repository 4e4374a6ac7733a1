"""Captions written from a :class:`~vse_ray.data.scene.Scene` alone: templates, synonyms, partial views.

Captions of one image differ in template, word choice, group order and which attributes they mention, so
captions of *different* images share more or less meaning: two scenes with a red circle on the left share
that phrase, a scene described only by its colours matches many others partially. This gives graded
caption-to-caption relevance (S-BERT, CIDEr, TF-IDF) for the losses to learn from.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from vse_ray.data.scene import ObjectGroup, Scene

_SHAPE_WORDS = {
    "circle": (("circle", "circles"), ("disc", "discs"), ("ball", "balls")),
    "square": (("square", "squares"), ("box", "boxes"), ("block", "blocks")),
    "triangle": (("triangle", "triangles"),),
    "diamond": (("diamond", "diamonds"), ("rhombus", "rhombuses")),
    "star": (("star", "stars"),),
    "cross": (("cross", "crosses"), ("plus sign", "plus signs")),
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
    "medium": ("medium", "medium-sized"),
    "large": ("large", "big"),
}
_COUNT_WORDS = {2: ("two", "a pair of"), 3: ("three",), 4: ("four",)}
_POSITION_WORDS = {
    "left": ("on the left", "on the left side", "at the left"),
    "right": ("on the right", "on the right side", "at the right"),
    "top": ("at the top", "near the top", "in the upper part"),
    "bottom": ("at the bottom", "near the bottom", "in the lower part"),
    "center": ("in the center", "in the middle", "at the centre"),
}
_TEXTURE_WORDS = {
    "plain": ("plain", ""),
    "striped": ("striped",),
    "checkered": ("checkered", "checked"),
    "dotted": ("dotted", "spotted"),
}
_NUMBER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four"}


def _pick(rng: np.random.Generator, options: tuple[str, ...]) -> str:
    return options[rng.integers(len(options))]


def _with_article(phrase: str) -> str:
    return ("an " if phrase[0] in "aeiou" else "a ") + phrase


def _join(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _objects(group: ObjectGroup, rng: np.random.Generator, colour: bool = True, shape: bool = True) -> str:
    """Noun phrase of a group: ``"a small red circle"``, ``"two blue boxes"``, ``"a red shape"``."""
    singular, plural = _SHAPE_WORDS[group.shape][rng.integers(len(_SHAPE_WORDS[group.shape]))]
    noun = (
        (singular if group.count == 1 else plural) if shape else ("shape" if group.count == 1 else "shapes")
    )
    size_p = 0.3 if group.size == "medium" else 0.7
    words = [_pick(rng, _SIZE_WORDS[group.size])] if shape and rng.random() < size_p else []
    if colour:
        words.append(_pick(rng, _COLOUR_WORDS[group.colour]))
    phrase = " ".join([*words, noun])
    if group.count == 1:
        return _with_article(phrase)
    return f"{_pick(rng, _COUNT_WORDS[group.count])} {phrase}"


def _placed(group: ObjectGroup, rng: np.random.Generator) -> str:
    return f"{_objects(group, rng)} {_pick(rng, _POSITION_WORDS[group.position])}"


def _background(scene: Scene, rng: np.random.Generator) -> str:
    texture = _pick(rng, _TEXTURE_WORDS[scene.texture])
    noun = _pick(rng, ("background", "backdrop"))
    return " ".join(word for word in (texture, scene.background, noun) if word)


def _shuffled(scene: Scene, rng: np.random.Generator) -> list[ObjectGroup]:
    return [scene.groups[i] for i in rng.permutation(len(scene.groups))]


def _full(scene: Scene, rng: np.random.Generator) -> str:
    placed = _join([_placed(g, rng) for g in _shuffled(scene, rng)])
    return f"{placed} on {_with_article(_background(scene, rng))}"


def _no_positions(scene: Scene, rng: np.random.Generator) -> str:
    return _join([_objects(g, rng) for g in _shuffled(scene, rng)])


def _picture_of(scene: Scene, rng: np.random.Generator) -> str:
    lead = _pick(rng, ("a picture of", "an image of", "a drawing of"))
    return f"{lead} {_no_positions(scene, rng)} on {_with_article(_background(scene, rng))}"


def _there_is(scene: Scene, rng: np.random.Generator) -> str:
    groups = _shuffled(scene, rng)[: int(rng.integers(1, 3))]
    return " and ".join(
        f"{_pick(rng, _POSITION_WORDS[g.position])} there is {_objects(g, rng)}" for g in groups
    )


def _background_with(scene: Scene, rng: np.random.Generator) -> str:
    background = _with_article(_background(scene, rng))
    return f"{background} with {_join([_placed(g, rng) for g in _shuffled(scene, rng)])}"


def _showing(scene: Scene, rng: np.random.Generator) -> str:
    lead = _pick(rng, ("an image showing", "a scene with", "this picture shows"))
    return f"{lead} {_join([_placed(g, rng) for g in _shuffled(scene, rng)])}"


def _counted(scene: Scene, rng: np.random.Generator) -> str:
    n = scene.n_objects
    noun = "shape" if n == 1 else _pick(rng, ("shapes", "objects"))
    return f"{_NUMBER_WORDS[n]} {noun} : {_no_positions(scene, rng)}"


def _colours_only(scene: Scene, rng: np.random.Generator) -> str:
    parts = [_objects(g, rng, shape=False) for g in _shuffled(scene, rng)]
    return f"{_join(parts)} on {_with_article(_background(scene, rng))}"


def _one_group(scene: Scene, rng: np.random.Generator) -> str:
    return _placed(scene.groups[rng.integers(len(scene.groups))], rng)


def _shapes_only(scene: Scene, rng: np.random.Generator) -> str:
    shapes = _join([_objects(g, rng, colour=False) for g in _shuffled(scene, rng)])
    return f"{shapes} on a {scene.background} background"


TEMPLATES: tuple[Callable[[Scene, np.random.Generator], str], ...] = (
    _full,
    _no_positions,
    _picture_of,
    _there_is,
    _background_with,
    _showing,
    _counted,
    _colours_only,
    _one_group,
    _shapes_only,
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
    for index in rng.permutation(len(TEMPLATES)):
        caption = TEMPLATES[index](scene, rng)
        if caption not in captions:
            captions.append(caption)
        if len(captions) == n_captions:
            return captions
    raise RuntimeError(f"could not write {n_captions} different captions for {scene}")  # pragma: no cover
