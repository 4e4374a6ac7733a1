"""The WordNet noun lemma of a word, as nltk's ``WordNetLemmatizer().lemmatize(word)`` gives it (nltk >= 3.8).

CVSE's released loader labels a test caption with the concepts whose lemma one of its words has. nltk's
lemmatiser reads the WordNet database, which nltk does not install; this module reads the two files of it
that the noun lemma needs, `index.noun` (the noun lemmas) and `noun.exc` (irregular plurals), from nltk's data
path or from any WordNet 3.0 folder (Debian's ``wordnet-base`` installs one in /usr/share/wordnet).

The lemma (WordNet's morphy for nouns, as nltk implements it): the candidates are the word and either its
exception-list bases or, when it has none, the word with one plural suffix replaced (``-s``, ``-ses``,
``-ves``, ``-xes``, ``-zes``, ``-ches``, ``-shes``, ``-men``, ``-ies``); of those that are WordNet nouns, the
shortest (the first of equal length); the word itself when none is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# nltk's MORPHOLOGICAL_SUBSTITUTIONS for nouns, in its order
NOUN_SUFFIXES = (
    ("s", ""),
    ("ses", "s"),
    ("ves", "f"),
    ("xes", "x"),
    ("zes", "z"),
    ("ches", "ch"),
    ("shes", "sh"),
    ("men", "man"),
    ("ies", "y"),
)
WORDNET_FILES = ("index.noun", "noun.exc")
GET_WORDNET = "python -m nltk.downloader wordnet"


@dataclass(frozen=True)
class NounLemmatizer:
    """WordNet's noun lemmas (`nouns`) and irregular forms (`exceptions`: form → its bases)."""

    nouns: frozenset[str]
    exceptions: Mapping[str, tuple[str, ...]]

    def lemma(self, word: str) -> str:
        """The shortest WordNet noun among `word` and its candidate bases; `word` when none is a noun."""
        bases = self.exceptions.get(word)
        if bases is None:
            bases = tuple(word[: -len(old)] + new for old, new in NOUN_SUFFIXES if word.endswith(old))
        found = [form for form in dict.fromkeys((word, *bases)) if form in self.nouns]
        return min(found, key=len) if found else word


def parse_wordnet_nouns(index_noun: str, noun_exc: str, source: str = "WordNet") -> NounLemmatizer:
    """A lemmatiser from the texts of `index.noun` and `noun.exc` (`source` names them in errors)."""
    nouns = set()
    for number, line in enumerate(index_noun.splitlines(), 1):
        if not line.strip() or line.startswith(" "):  # the licence header's lines start with spaces
            continue
        fields = line.split()
        if len(fields) < 2 or fields[1] != "n":
            raise ValueError(f"{source}/index.noun line {number}: not a noun index entry: {line[:60]!r}")
        nouns.add(fields[0])
    exceptions = {}
    for number, line in enumerate(noun_exc.splitlines(), 1):
        fields = line.split()
        if len(fields) == 1:
            raise ValueError(f"{source}/noun.exc line {number}: a form without a base: {line[:60]!r}")
        if fields:
            exceptions[fields[0]] = tuple(fields[1:])
    return NounLemmatizer(frozenset(nouns), exceptions)


def load_noun_lemmatizer(folder: str | Path = "") -> NounLemmatizer:
    """The lemmatiser of the WordNet database in `folder` ("": nltk's ``corpora/wordnet``, zipped or not).

    Raises FileNotFoundError (one line saying how to install it) when the files are not there, ValueError
    naming the file and line for one that is not WordNet's."""
    if folder:
        root = Path(folder)
        missing = [name for name in WORDNET_FILES if not (root / name).is_file()]
        if missing:
            raise FileNotFoundError(
                f"wordnet {root}: no {', '.join(missing)} there (a WordNet 3.0 database folder, e.g. "
                f"/usr/share/wordnet of Debian's wordnet-base, or nltk_data/corpora/wordnet)"
            )
        index, exc = ((root / name).read_text(encoding="utf-8") for name in WORDNET_FILES)
        return parse_wordnet_nouns(index, exc, source=str(root))
    import nltk

    try:
        found = [nltk.data.find(f"corpora/wordnet/{name}") for name in WORDNET_FILES]
    except LookupError:
        raise FileNotFoundError(
            "CVSE's released reading lemmatises caption words with WordNet, whose data nltk does not have "
            f"here: install it with `{GET_WORDNET}`, or give a WordNet folder with model_params.wordnet"
        ) from None
    index, exc = (pointer.open().read().decode("utf-8") for pointer in found)
    return parse_wordnet_nouns(index, exc, source="nltk corpora/wordnet")
