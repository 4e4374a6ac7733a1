"""Input checks shared by the relevance kernels: early ValueErrors naming the bad argument and row."""

from __future__ import annotations

from collections.abc import Sequence


def check_texts(name: str, texts: Sequence[str]) -> list[str]:
    """Return ``texts`` as a list, raising ValueError naming ``name[i]`` for a non-string entry."""
    if isinstance(texts, str):
        raise ValueError(f"{name} must be a sequence of strings, got a single str")
    texts = list(texts)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(f"{name}[{i}] must be a str, got {type(text).__name__}")
    return texts


def check_reference_sets(references: Sequence[Sequence[str]]) -> list[list[str]]:
    """Return the reference sets as lists, raising ValueError naming ``references[i]`` when one is bad.

    Each reference set must be a non-empty sequence of strings (the captions of one image).
    """
    if isinstance(references, str):
        raise ValueError("references must be a sequence of reference sets, got a single str")
    sets = []
    for i, refs in enumerate(references):
        if isinstance(refs, str):
            raise ValueError(f"references[{i}] must be a sequence of captions, got a single str")
        refs = check_texts(f"references[{i}]", refs)
        if not refs:
            raise ValueError(f"references[{i}] is empty: every image needs at least one reference caption")
        sets.append(refs)
    return sets
