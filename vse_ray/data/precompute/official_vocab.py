"""Vocabularies of the authors' released code, and their tokenisation, so that imported word embeddings read
the ids they were trained on.

The released codes (VSE++, SCAN, SGRAF, VSE∞) share one ``Vocabulary`` class (``word2idx``, ``idx2word``,
``idx``) with ``<pad>`` 0, ``<start>``, ``<end>`` and ``<unk>``. SCAN, SGRAF and VSE∞ store it as JSON
(``serialize_vocab``: ``{"word2idx", "idx2word", "idx"}``); VSE++ pickles the object. A pickle is read
here by an unpickler that builds nothing but plain containers and a stand-in for ``Vocabulary``: any other
type it names is refused, so no code of the file runs.

Every released dataset turns a caption into ``<start>`` + ``nltk.tokenize.word_tokenize(caption.lower())`` +
``<end>``, an unknown word reading ``<unk>``.

The ladder loss code (cdluminate/ladderloss, the CVSE++ paper's) ships no vocabulary: its ``lingual.py``
saves a tokens file, JSON ``[{sentence id: [tokens, image id]}, {word: count}]`` (gzip-compressed when named
``.gz``), and builds the vocabulary from it at run time: ``<padding>``, ``<start>``, ``<end>``, ``<unknown>``
(ids 0-3, read here as ``<pad>``, ``<start>``, ``<end>``, ``<unk>``), then the words counted
`LADDER_MIN_COUNT` times or more, sorted. Its tokeniser replaces punctuation by spaces before
``word_tokenize`` (``strip_punctuation``).
"""

from __future__ import annotations

import gzip
import io
import json
import pickle
import re
import string
from collections.abc import Iterable
from pathlib import Path
from typing import Any

SPECIALS = ("<pad>", "<start>", "<end>", "<unk>")
NLTK_DATA = "punkt_tab"
GET_PUNKT = f"python -m nltk.downloader {NLTK_DATA}"
# Where punkt (nltk 3.10) may end a sentence: . ? or ! followed by one of its non-word characters, or by
# spaces and a further token. punkt gives a caption without one as one sentence, its trailing spaces cut.
_SENTENCE_END = re.compile(r"[.?!](?:[)\";}\]*:@'({\[\u2018\u2019\u201c\u201d\xab\xbb?!]|\s+\S)")
# The ladder code's punctuation class: string.punctuation pasted unescaped into [...], where its "\\]" escapes
# the "]", so every ASCII punctuation mark but the backslash (which stays in the caption).
_LADDER_PUNCTUATION = re.compile("[" + re.escape(string.punctuation.replace("\\", "")) + "]")
LADDER_MIN_COUNT = 5  # lingual.CocoLtokDataset's threshold
GZIP_MAGIC = b"\x1f\x8b"


class _Vocabulary:
    """What a pickled ``Vocabulary`` becomes: its attributes only."""


class _VocabUnpickler(pickle.Unpickler):
    """Plain containers, plus ``Vocabulary`` of any module as :class:`_Vocabulary`; nothing else."""

    def find_class(self, module: str, name: str) -> Any:
        if name == "Vocabulary":
            return _Vocabulary
        # protocol 0/1 pickles of a class instance (Python 2 module names included)
        if name == "_reconstructor" and module in ("copyreg", "copy_reg"):
            return _reconstructor
        if name == "object" and module in ("builtins", "__builtin__"):
            return object
        raise pickle.UnpicklingError(f"holds the type {module}.{name}")


def _reconstructor(cls: type, base: type, state: Any) -> Any:
    if cls is not _Vocabulary or base is not object:
        raise pickle.UnpicklingError("holds an object other than a Vocabulary")
    return _Vocabulary()


def read_vocab_file(path: str | Path) -> dict[str, int]:
    """``{word: id}`` of a released vocabulary file (JSON or pickle), checked.

    Raises:
        ValueError: one line naming the file: unreadable, another layout, ids that are not 0..n-1 once
            each, or a special token missing (``<pad>`` must be 0, the padding of every batch).
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"vocab {path}: no such file")
    data = path.read_bytes()
    if data[:2] == GZIP_MAGIC:  # a ladder tokens file saved as .gz
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as err:
            raise ValueError(f"vocab {path}: not a readable gzip file ({err}); not loaded") from None
    is_json = data.lstrip()[:1] in (b"{", b"[")
    try:
        if is_json:
            loaded: Any = json.loads(data)
        else:
            loaded = _VocabUnpickler(io.BytesIO(data), encoding="utf-8").load()
    except (pickle.UnpicklingError, ValueError, EOFError, UnicodeDecodeError) as err:
        kind = "JSON" if is_json else "pickle"
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise ValueError(f"vocab {path}: not a readable {kind} vocabulary ({first}); not loaded") from None
    words = _word2idx(loaded)
    if words is None:
        raise ValueError(
            f"vocab {path}: expected a Vocabulary (word2idx, idx2word, idx), JSON {{'word2idx': ...}} or the "
            f"ladder code's tokens file [tokens, counts], found {type(loaded).__name__}"
        )
    return _checked(path, words)


def ladder_tokens_file(path: str | Path) -> bool:
    """Whether `path` is the ladder code's tokens file (a JSON list, or gzip), from its first bytes: its
    captions are then tokenised with the punctuation removed."""
    with open(path, "rb") as f:
        head = f.read(4096)
    return head[:2] == GZIP_MAGIC or head.lstrip()[:1] == b"["


def _word2idx(loaded: Any) -> dict | None:
    if isinstance(loaded, _Vocabulary):
        loaded = vars(loaded)
    if isinstance(loaded, list) and len(loaded) == 2 and all(isinstance(x, dict) for x in loaded):
        counts = loaded[1]  # the ladder code's tokens file: its Vocabulary(counts, threshold)
        kept = sorted(w for w, n in counts.items() if isinstance(n, int) and n >= LADDER_MIN_COUNT)
        return {w: i for i, w in enumerate([*SPECIALS, *kept])}
    if isinstance(loaded, dict) and isinstance(loaded.get("word2idx"), dict):
        return loaded["word2idx"]
    return None


def _checked(path: Path, words: dict) -> dict[str, int]:
    bad = next((w for w, i in words.items() if not isinstance(w, str) or type(i) is not int), None)
    if bad is not None:
        raise ValueError(f"vocab {path}: word2idx {bad!r} -> {words[bad]!r}: expected a word and an int id")
    if sorted(words.values()) != list(range(len(words))):
        raise ValueError(f"vocab {path}: expected ids 0..{len(words) - 1} once each, found others")
    missing = [s for s in SPECIALS if s not in words]
    if missing:
        raise ValueError(f"vocab {path}: expected the special tokens {SPECIALS}, found none for {missing}")
    if words["<pad>"] != 0:
        raise ValueError(f"vocab {path}: expected '<pad>' at id 0, found {words['<pad>']}")
    return dict(words)


class ReleasedTokenizer:
    """``nltk.tokenize.word_tokenize(text.lower())``, as the released datasets call it; with
    ``strip_punctuation`` (the ladder code's ``Sparkle.tokenize``) every ASCII punctuation mark but the
    backslash becomes a space first and runs of spaces one.

    ``word_tokenize`` first splits sentences with nltk's punkt data, then tokenises each. Without that data
    (it is downloaded separately), a caption punkt would see as one sentence is tokenised exactly by nltk's
    word tokenizer alone; a caption with a possible sentence end inside is refused, saying how to get punkt.
    """

    def __init__(self, strip_punctuation: bool = False) -> None:
        from nltk.tokenize import NLTKWordTokenizer, sent_tokenize

        self.strip_punctuation = strip_punctuation
        try:
            sent_tokenize("a.")
            self._punkt = True
        except LookupError:
            self._punkt = False
        self._words = NLTKWordTokenizer()

    def check(self, texts: Iterable[str]) -> None:
        """ValueError for the first caption this tokenizer cannot tokenise as the released code does."""
        if not self._punkt:
            for text in texts:
                self._unsplit(self._prepared(text))

    def _prepared(self, text: str) -> str:
        text = text.lower()
        return " ".join(_LADDER_PUNCTUATION.sub(" ", text).split()) if self.strip_punctuation else text

    def _unsplit(self, text: str) -> str:
        """`text` without trailing spaces; ValueError where punkt may split it into sentences."""
        text = text.rstrip()
        if _SENTENCE_END.search(text):
            raise ValueError(
                f"caption {text!r}: may hold more than one sentence, which the released tokenizer splits "
                f"with nltk's punkt data, not installed here; install it with `{GET_PUNKT}`"
            )
        return text

    def __call__(self, text: str) -> str:
        """The caption's tokens joined by single spaces (no token holds a space)."""
        text = self._prepared(text)
        if self._punkt:
            from nltk.tokenize import word_tokenize

            return " ".join(word_tokenize(text))
        return " ".join(self._words.tokenize(self._unsplit(text)))
