"""Pure-Python caption tokenisation shared by every n-gram relevance kernel."""

from __future__ import annotations

import re

_NON_WORD = re.compile(r"[^\w\s]|_")


def tokenize(text: str) -> str:
    """Lower-case a caption, strip punctuation and join the words with single spaces.

    pycocoevalcap's PTB tokenizer needs a Java runtime and the Stanford CoreNLP jar, so the
    relevance kernels use this pure-Python tokenisation instead. Apply it to *both* hypotheses and
    references: CIDEr only compares whitespace-split tokens, so mixing tokenisers changes the scores.
    Punctuation is replaced by a space, so ``"man's"`` becomes ``"man s"`` (PTB would give ``"man 's"``).

    Args:
        text: A raw caption.

    Returns:
        The tokens, lower-cased, separated by single spaces (``""`` when nothing is left).

    Raises:
        ValueError: If ``text`` is not a string.

    Example:
        >>> tokenize("A man, riding a Horse!")
        'a man riding a horse'
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    return " ".join(_NON_WORD.sub(" ", text.lower()).split())
