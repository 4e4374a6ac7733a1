"""Small, seeded caption sets for the relevance tests (pre-tokenised: lower-case, space separated)."""

from __future__ import annotations

import random

_SUBJECTS = ["a man", "a woman", "two dogs", "a little girl", "the boy", "a black dog", "people", "a dog"]
_VERBS = ["is riding", "rides", "is walking", "runs", "plays with", "sits on", "is holding", "jumps over"]
_OBJECTS = ["a red bike", "a horse", "the ball", "a bench", "a bike", "a red ball", "the dog", "a fence"]
_PLACES = ["in the park", "on the beach", "in a city street", "near the water", "", "on a sunny day"]

# Empty, one-word and highly repetitive captions exercise zero norms, zero lengths and term counts >= 2.
EDGE_CAPTIONS = ["", "dog", "a a a a a", "a dog and a dog and a dog", "a man rides a horse a man rides"]


def make_captions(n: int, seed: int) -> list[str]:
    """``n`` grammar-generated captions with heavy n-gram overlap and some repeated n-grams."""
    rng = random.Random(seed)
    captions = []
    for _ in range(n):
        words = f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} {rng.choice(_PLACES)}"
        if rng.random() < 0.25:
            words += f" and {rng.choice(_OBJECTS)}"
        captions.append(" ".join(words.split()))
    return captions


def make_reference_sets(n_images: int, seed: int) -> list[list[str]]:
    """``n_images`` reference sets of 1 to 6 captions each (uneven sizes on purpose)."""
    rng = random.Random(seed)
    captions = make_captions(6 * n_images, seed)
    return [captions[6 * i : 6 * i + rng.randint(1, 6)] for i in range(n_images)]
