"""The WordNet noun lemma (nltk's WordNetLemmatizer) read offline from WordNet's index.noun and noun.exc."""

from __future__ import annotations

from pathlib import Path

import nltk
import pytest

from vse_ray.data.precompute.lemmas import load_noun_lemmatizer

HEADER = "  1 This software and database is being provided to you, the LICENSEE, by  \n"
NOUNS = ["bus", "child", "dog", "dogs", "glass", "glasses", "lady", "leaf", "man", "men", "wife"]


def write_wordnet(folder: Path, nouns: list[str], exceptions: list[str]) -> Path:
    """A WordNet folder with these noun entries, in WordNet's file formats."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "index.noun").write_text(HEADER + "".join(f"{n} n 1 1 @ 1 0 01234567  \n" for n in nouns))
    (folder / "noun.exc").write_text("".join(f"{line}\n" for line in exceptions))
    return folder


def test_the_lemma_follows_wordnet_morphy_for_nouns(tmp_path):
    exceptions = ["children child", "men man", "wives wife"]
    lemmatizer = load_noun_lemmatizer(write_wordnet(tmp_path, NOUNS, exceptions))
    cases = {
        "dogs": "dog",  # both are nouns: the shorter
        "glasses": "glass",  # -es: "glasse" is no noun, -ses → "glass" is
        "buses": "bus",
        "ladies": "lady",
        "leaves": "leaf",
        "wives": "wife",  # the exception list (the -ves rule gives "wif")
        "children": "child",
        "men": "men",  # "men" and its base "man" are both nouns of length 3: the first
        "runs": "runs",  # no candidate is a noun: the word itself
        "child": "child",
    }
    assert {w: lemmatizer.lemma(w) for w in cases} == cases


def test_missing_or_foreign_wordnet_files_fail_in_one_line(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match=r"wordnet .*: no index.noun, noun.exc there"):
        load_noun_lemmatizer(tmp_path / "nope")
    bad = write_wordnet(tmp_path / "bad", ["dog"], [])
    (bad / "index.noun").write_text("dog v 1 0 1 0 01234567\n")
    with pytest.raises(ValueError, match=r"index.noun line 1: not a noun index entry"):
        load_noun_lemmatizer(bad)
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path / "empty")])
    with pytest.raises(FileNotFoundError, match="python -m nltk.downloader wordnet"):
        load_noun_lemmatizer()
