"""Captions written from a :class:`~vse_ray.data.synthetic.scene.Scene` alone, led by what the objects are.

Every caption names every object group by its colour and kind (with its number when there are several) and
ends with (or starts from) the background, its colour and texture ("on gray stripes", "on a white
checkerboard"). Each kind brings its own words: nouns, a fixed clause of what such a thing does ("a kite
flying", "a sailboat sailing") and, in one template, also a part its pictogram is drawn with ("a house with a
pointed roof with a dark front door"), so the kinds dominate the sentence; there is no boilerplate
("background", "image") common to all captions. The "doing" clause is the same for every object of a kind:
it is a second name of the kind, not a further fact (nothing in the pixels flies or sails). The facts are
the same in every caption of an image; what varies is the wording (nouns, group order, sentence structure)
and which *extra* visible facts are added: sizes, positions and the spatial relation between two groups
(read from their positions). Every fact a caption states is drawn in the pixels
(:func:`vse_ray.data.synthetic.dataset.render_scene`).

What S-BERT makes of them (``parity/caption_relevance.py``) is in docs/relevance.md, "What S-BERT
measures on the embedded captions".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from vse_ray.data.synthetic.scene import ObjectGroup, Scene


@dataclass(frozen=True)
class _Kind:
    """Words of one object kind: ``(singular, plural)`` nouns, what it does and a part it is drawn with."""

    nouns: tuple[tuple[str, str], ...]
    doing: tuple[str, str]
    detail: tuple[str, str]


_KINDS = {
    "ball": _Kind(
        (("ball", "balls"), ("rubber ball", "rubber balls")),
        ("bouncing", "bouncing"),
        ("round as a globe", "round as globes"),
    ),
    "box": _Kind(
        (("crate", "crates"), ("box", "boxes")),
        ("closed", "closed"),
        ("with a diagonal brace", "with diagonal braces"),
    ),
    "tree": _Kind(
        (("pine tree", "pine trees"), ("fir tree", "fir trees")),
        ("growing", "growing"),
        ("on a slim trunk", "on slim trunks"),
    ),
    "house": _Kind(
        (("house", "houses"), ("cottage", "cottages")),
        ("with a pointed roof", "with pointed roofs"),
        ("with a dark front door", "with dark front doors"),
    ),
    "car": _Kind(
        (("car", "cars"), ("automobile", "automobiles")),
        ("driving", "driving"),
        ("on two dark wheels", "on dark wheels"),
    ),
    "boat": _Kind(
        (("sailboat", "sailboats"), ("yacht", "yachts")),
        ("sailing", "sailing"),
        ("with two sails", "with two sails each"),
    ),
    "fish": _Kind(
        (("fish", "fish"),),
        ("swimming", "swimming"),
        ("with a tail fin and a dark eye", "with tail fins and dark eyes"),
    ),
    "flower": _Kind(
        (("flower", "flowers"), ("blossom", "blossoms")),
        ("in bloom", "in bloom"),
        ("with five petals", "with five petals each"),
    ),
    "star": _Kind(
        (("star", "stars"), ("five-pointed star", "five-pointed stars")),
        ("twinkling", "twinkling"),
        ("with five points", "with five points each"),
    ),
    "heart": _Kind(
        (("heart", "hearts"), ("love heart", "love hearts")),
        ("with a pointed tip", "with pointed tips"),
        ("with two rounded lobes", "with two rounded lobes each"),
    ),
    "umbrella": _Kind(
        (("umbrella", "umbrellas"), ("parasol", "parasols")),
        ("opened up", "opened up"),
        ("with a hooked handle", "with hooked handles"),
    ),
    "mushroom": _Kind(
        (("mushroom", "mushrooms"), ("toadstool", "toadstools")),
        ("sprouting", "sprouting"),
        ("with a domed cap on a stem", "with domed caps on stems"),
    ),
    "kite": _Kind(
        (("kite", "kites"), ("diamond kite", "diamond kites")),
        ("flying", "flying"),
        ("with a wavy tail", "with wavy tails"),
    ),
}
_SIZE_WORDS = {"small": ("small", "little", "tiny"), "medium": ("medium-sized",), "large": ("large", "big")}
_COUNT_WORDS = {2: ("two", "a pair of"), 3: ("three",), 4: ("four",)}
_POSITION_WORDS = {
    "left": ("on the left", "at the left"),
    "right": ("on the right", "at the right"),
    "top": ("at the top", "near the top"),
    "bottom": ("at the bottom", "near the bottom"),
    "center": ("in the center", "in the middle"),
}
_CENTRES = {"left": (0, 1), "right": (2, 1), "top": (1, 0), "bottom": (1, 2), "center": (1, 1)}
_GROUND_WORDS = {
    "plain": ("plain {}", "solid {}"),
    "striped": ("{} stripes", "{} diagonal stripes"),
    "checkered": ("{} checks", "a {} checkerboard"),
    "dotted": ("{} polka dots", "{} dots"),
}


def _pick(rng: np.random.Generator, options: tuple[str, ...]) -> str:
    return options[rng.integers(len(options))]


def _with_article(phrase: str) -> str:
    return ("an " if phrase[0] in "aeiou" else "a ") + phrase


def _join(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _objects(group: ObjectGroup, rng: np.random.Generator, size_p: float = 0.3, detail: bool = False) -> str:
    """Noun phrase of a group with what it does (and, ``detail``, a drawn part): ``"a red kite flying"``."""
    kind = _KINDS[group.shape]
    index = 0 if group.count == 1 else 1
    noun = kind.nouns[rng.integers(len(kind.nouns))][index]
    clause = f"{kind.doing[index]} {kind.detail[index]}" if detail else kind.doing[index]
    words = [_pick(rng, _SIZE_WORDS[group.size])] if rng.random() < size_p else []
    phrase = " ".join([*words, group.colour, noun])
    counted = (
        _with_article(phrase) if group.count == 1 else f"{_pick(rng, _COUNT_WORDS[group.count])} {phrase}"
    )
    return f"{counted} {clause}"


def _relation(a: ObjectGroup, b: ObjectGroup) -> str:
    """Where group a is relative to group b, read from their positions (both are drawn there)."""
    (ax, ay), (bx, by) = _CENTRES[a.position], _CENTRES[b.position]
    if ax != bx and abs(ax - bx) >= abs(ay - by):
        return "to the left of" if ax < bx else "to the right of"
    return "above" if ay < by else "below"


def _ground(scene: Scene, rng: np.random.Generator) -> str:
    """The background: its colour and texture, ``"gray stripes"``."""
    return _pick(rng, _GROUND_WORDS[scene.texture]).format(scene.background)


def _shuffled(scene: Scene, rng: np.random.Generator) -> list[ObjectGroup]:
    return [scene.groups[i] for i in rng.permutation(len(scene.groups))]


def _placed(group: ObjectGroup, rng: np.random.Generator) -> str:
    return f"{_objects(group, rng)} {_pick(rng, _POSITION_WORDS[group.position])}"


def _listed(scene: Scene, rng: np.random.Generator) -> str:
    return f"{_join([_objects(g, rng) for g in _shuffled(scene, rng)])} on {_ground(scene, rng)}"


def _positioned(scene: Scene, rng: np.random.Generator) -> str:
    return f"{_join([_placed(g, rng) for g in _shuffled(scene, rng)])}, on {_ground(scene, rng)}"


def _detailed(scene: Scene, rng: np.random.Generator) -> str:
    objects = _join([_objects(g, rng, detail=True) for g in _shuffled(scene, rng)])
    return f"{objects} on {_ground(scene, rng)}"


def _related(scene: Scene, rng: np.random.Generator) -> str:
    groups = _shuffled(scene, rng)
    if len(groups) == 1:
        return f"{_placed(groups[0], rng)} on {_ground(scene, rng)}"
    first, second, *rest = groups
    parts = [f"{_objects(first, rng)} {_relation(first, second)} {_objects(second, rng)}"]
    parts += [_objects(g, rng) for g in rest]
    return f"{_join(parts)} on {_ground(scene, rng)}"


def _sizes(scene: Scene, rng: np.random.Generator) -> str:
    return f"{_join([_objects(g, rng, size_p=1.0) for g in _shuffled(scene, rng)])} on {_ground(scene, rng)}"


def _ground_first(scene: Scene, rng: np.random.Generator) -> str:
    return f"on {_ground(scene, rng)}, {_join([_objects(g, rng) for g in _shuffled(scene, rng)])}"


TEMPLATES: tuple[Callable[[Scene, np.random.Generator], str], ...] = (
    _listed,
    _positioned,
    _detailed,
    _related,
    _sizes,
    _ground_first,
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
