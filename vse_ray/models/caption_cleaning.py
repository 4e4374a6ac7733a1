"""ALBEF's caption cleaning (Li et al., NeurIPS 2021, released ``pre_caption``), which CUSA applies to every
caption before CLIP's tokenizer (Huang et al. AAAI 2024, released ``dataset/utils.py``), as its description
reads:

1. lower-case the caption; each of , . ' ! ? " ( ) * # : ; ~ and each hyphen and slash becomes a space, and
   then ``<person>`` becomes ``person``;
2. every run of two or more whitespace characters becomes one space (a lone tab or newline stays);
3. trailing newlines go, then spaces at both ends;
4. at most ``max_words`` words are kept, words being what single spaces separate (64 in CUSA's datasets).

A caption that comes out empty is refused, as the original refuses it.
"""

from __future__ import annotations

import re

CLEANINGS = ("", "albef")  # model_params.caption_cleaning: none, or ALBEF's pre_caption
CUSA_MAX_WORDS = 64
_SPACED = re.compile(r"[,.'!?\"()*#:;~/-]")
_WHITESPACE_RUN = re.compile(r"\s{2,}")


def albef_clean(caption: str, max_words: int = CUSA_MAX_WORDS) -> str:
    """The caption as ALBEF's ``pre_caption`` leaves it; ValueError when nothing is left."""
    text = _SPACED.sub(" ", caption.lower()).replace("<person>", "person")
    text = _WHITESPACE_RUN.sub(" ", text).rstrip("\n").strip(" ")
    words = text.split(" ")
    if len(words) > max_words:
        text = " ".join(words[:max_words])
    if not text:
        raise ValueError(f"caption cleaning (albef) leaves nothing of the caption {caption!r}")
    return text
