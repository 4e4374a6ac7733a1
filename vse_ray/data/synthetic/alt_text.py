"""Terse, noisy alt-text captions of a :class:`~vse_ray.data.synthetic.scene.Scene`: the caption style of the
CLIP pretraining pool (:mod:`vse_ray.data.synthetic.pool`), unlike the embedded dataset's sentences
(:mod:`vse_ray.data.synthetic.scene_captions`), so that fine-tuning on those is a step to another domain.

Web alt text is short and careless: keyword lists, boilerplate ("stock image of"), digits for counts,
attributes in any order, words left out, typos. A caption here names the scene's object groups (colour and
kind, the count as a digit) in one of four forms, each attribute order drawn per group (``"red kite"``,
``"kite red"``), sometimes with a size or position word, and the background with a probability; then each
word is dropped with probability `DROP` (one word always stays) and each remaining word of four letters or
more gets a typo (two letters swapped, one dropped or doubled) with probability `TYPO`. Words are those of
an alt text ("grey", "bg", "pic"), partly other than the sentences' ("boat" where they say "sailboat").
What it states is drawn in the pixels, but not everything drawn is stated.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from vse_ray.data.synthetic.scene import ObjectGroup, Scene

DROP = 0.1  # each word is left out with this probability
TYPO = 0.05  # each word of 4+ letters gets one typo with this probability
BACKGROUND = 0.7  # the background is named with this probability
EXTRA = 0.25  # a group's size, and its position, are each named with this probability

_NOUNS = {
    "ball": ("ball", "balls"),
    "box": ("box", "boxes"),
    "tree": ("tree", "trees"),
    "house": ("house", "houses"),
    "car": ("car", "cars"),
    "boat": ("boat", "boats"),
    "fish": ("fish", "fish"),
    "flower": ("flower", "flowers"),
    "star": ("star", "stars"),
    "heart": ("heart", "hearts"),
    "umbrella": ("umbrella", "umbrellas"),
    "mushroom": ("mushroom", "mushrooms"),
    "kite": ("kite", "kites"),
}
_COLOUR_WORDS = {"gray": ("gray", "grey")}
_SIZES = {"small": "small", "medium": "medium", "large": "big"}
_POSITIONS = {"left": "left", "right": "right", "top": "top", "bottom": "bottom", "center": "middle"}
_TEXTURES = {"plain": ("plain", ""), "striped": ("stripes", "striped"), "checkered": ("checks", "checkered")}
_TEXTURES["dotted"] = ("dots", "dotted")
_PREFIXES = ("stock image of", "clipart", "pic:", "image may contain:", "photo of", "icon")


def _pick(rng: np.random.Generator, options: tuple[str, ...]) -> str:
    return options[rng.integers(len(options))]


def _group(group: ObjectGroup, rng: np.random.Generator) -> list[str]:
    """The words of a group in a drawn order: ``["2", "red", "kites"]`` or ``["kites", "red", "x2"]``."""
    noun = _NOUNS[group.shape][0 if group.count == 1 else 1]
    attributes = [_pick(rng, _COLOUR_WORDS.get(group.colour, (group.colour,)))]
    if rng.random() < EXTRA:
        attributes.append(_SIZES[group.size])
    if rng.random() < EXTRA:
        attributes.append(_POSITIONS[group.position])
    words = [attributes[i] for i in rng.permutation(len(attributes))]
    words = [*words, noun] if rng.random() < 0.6 else [noun, *words]
    if group.count > 1:
        words = [str(group.count), *words] if rng.random() < 0.5 else [*words, f"x{group.count}"]
    return words


def _background(scene: Scene, rng: np.random.Generator) -> list[str]:
    colour = _pick(rng, _COLOUR_WORDS.get(scene.background, (scene.background,)))
    texture = _pick(rng, _TEXTURES[scene.texture])
    words = [w for w in (colour, texture) if w]
    return [*words, "bg"] if rng.random() < 0.3 else words


def _groups(scene: Scene, rng: np.random.Generator) -> list[list[str]]:
    return [_group(scene.groups[i], rng) for i in rng.permutation(len(scene.groups))]


def _keywords(scene: Scene, rng: np.random.Generator) -> list[str]:
    """``"red, kite, ball, blue, grey, stripes"``: every word a keyword, shuffled."""
    words = [w for group in _groups(scene, rng) for w in group]
    if rng.random() < BACKGROUND:
        words += _background(scene, rng)
    return [words[i] + "," for i in rng.permutation(len(words))]


def _tags(scene: Scene, rng: np.random.Generator) -> list[str]:
    """``"#redkite #blueball #grey"``."""
    tags = ["#" + "".join(group) for group in _groups(scene, rng)]
    if rng.random() < BACKGROUND:
        tags.append("#" + "".join(_background(scene, rng)))
    return tags


def _phrase(scene: Scene, rng: np.random.Generator) -> list[str]:
    """``"red kite + ball blue on grey stripes"``."""
    words: list[str] = []
    for k, group in enumerate(_groups(scene, rng)):
        words += ([_pick(rng, ("+", "&", "and", "w/"))] if k else []) + group
    if rng.random() < BACKGROUND:
        words += [_pick(rng, ("on", "-", "over")), *_background(scene, rng)]
    return words


def _boilerplate(scene: Scene, rng: np.random.Generator) -> list[str]:
    """``"stock image of red kite, ball blue"``."""
    groups = _groups(scene, rng)
    words = _pick(rng, _PREFIXES).split() + [w for group in groups for w in [*group[:-1], group[-1] + ","]]
    if rng.random() < BACKGROUND:
        words += _background(scene, rng)
    return words


FORMS: tuple[Callable[[Scene, np.random.Generator], list[str]], ...] = (
    _keywords,
    _tags,
    _phrase,
    _boilerplate,
)


def _typo(word: str, rng: np.random.Generator) -> str:
    """One letter of `word` swapped with the next, dropped or doubled."""
    at = int(rng.integers(len(word) - 1))
    kind = int(rng.integers(3))
    if kind == 0:
        return word[:at] + word[at + 1] + word[at] + word[at + 2 :]
    if kind == 1:
        return word[:at] + word[at + 1 :]
    return word[: at + 1] + word[at:]


def alt_text(scene: Scene, rng: np.random.Generator) -> str:
    """One alt-text caption of `scene`: a drawn form, words dropped and misspelt (module docstring)."""
    words = FORMS[rng.integers(len(FORMS))](scene, rng)
    kept = [w for w in words if rng.random() >= DROP] or [words[rng.integers(len(words))]]
    noisy = [_typo(w, rng) if len(w) >= 4 and rng.random() < TYPO else w for w in kept]
    return " ".join(noisy).rstrip(",")
