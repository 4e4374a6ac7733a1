"""The files CVSE reads besides a precomp folder's regions, made for the synthetic parity datasets.

CVSE (BruceW91/CVSE `94c2191`, `data.py`, `train_f30k.py`) reads, beside `{split}_ims.npy` and
`{split}_caps.txt`: each split's image ids (`{split}_ids.txt`, one line per image) and, from the paths its
options name, the concept files of its `data/f30k_annotations/Concept_annotations/` in their released formats
(`vse_ray/official/cvse_concepts.py`):

- `category_concepts.json` (``{word: index}``), `parity_adj_concepts.pkl` (``nums``: train captions naming
  each concept, ``adj_all``: captions naming both, zero diagonal, int32; ``adj_O_P`` and ``adj_O_M``, which
  the released graph also builds, are copies of it), `parity_concepts_glove_word2vec.pkl` (the concepts'
  input vectors, (K, 300) float64: **synthetic**, N(0, 0.4²) drawn with NumPy's generator of seed 0, where
  the released file holds GloVe vectors) and `all_f30k_concept_label.json` (each train image's concepts:
  those of its captions, ``[{"img_id": "0", "concept_labels": [...]}, ...]``), in `concepts/`;
- the WordNet database nltk's `WordNetLemmatizer` reads (`nltk_data/corpora/wordnet/`), with which the
  released loader labels a test caption by the lemmas of its words. It is **synthetic** too: its nouns
  (`index.noun`) are the content words of the captions (the words outside vse_ray's function words, every
  split), its other files empty, so a word's lemma is the shortest of itself and its noun-plural bases (nltk's
  rules) that the captions hold ("trees" → "tree", "boxes" → "box", "dots" stays "dots"). vse_ray reads the
  same folder (`model_params.wordnet`) and the released code reads it through nltk's data path.

The concepts are the lemmas of the train captions' content words, by how many captions name each (ties in
alphabetical order), all of them. The regions, captions and vocabulary stay links to the source folder.

    python parity/cvse_files.py --regions data/scenes_r12 --out data/scenes_r12_cvse
"""

from __future__ import annotations

import argparse
import json
import pickle
from collections import Counter
from pathlib import Path

import numpy as np
from make_region_dataset import SPLIT_FILES

from vse_ray.data.precompute.concepts import STOPWORDS
from vse_ray.data.precompute.lemmas import NounLemmatizer

LINKED = ("_ims.npy", "_caps.txt")
CONCEPTS = "concepts"  # the folder of the released concept files
WORDNET = "nltk_data/corpora/wordnet"  # the WordNet folder, under nltk's data path `nltk_data`
ADJ_FILE, VECTORS_FILE = "parity_adj_concepts.pkl", "parity_concepts_glove_word2vec.pkl"
NAMES_FILE, LABELS_FILE = "category_concepts.json", "all_f30k_concept_label.json"
VECTOR_DIM, VECTOR_SD = 300, 0.4
# nltk's WordNet reader opens these besides index.noun; empty, they hold no lemma
EMPTY_WORDNET = (
    *(f"index.{pos}" for pos in ("verb", "adj", "adv")),
    *(f"data.{pos}" for pos in ("noun", "verb", "adj", "adv")),
    *(f"{pos}.exc" for pos in ("noun", "verb", "adj", "adv")),
    "index.sense",
)


def content_words(captions: list[str]) -> list[str]:
    """The distinct words of `captions` outside vse_ray's function words, sorted."""
    return sorted({w for c in captions for w in c.split()} - STOPWORDS)


def caption_concepts(caption: str, lemmatizer: NounLemmatizer, index: dict[str, int]) -> list[int]:
    """The sorted concepts (indices) whose word is the lemma of one of `caption`'s words."""
    return sorted({index[lemma] for w in caption.split() if (lemma := lemmatizer.lemma(w)) in index})


def write_wordnet(folder: Path, nouns: list[str]) -> None:
    """A WordNet folder whose nouns are `nouns` (one synset each), the rest of its files empty."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"{noun} n 1 0 1 0 {k + 1:08d}\n" for k, noun in enumerate(nouns)]
    (folder / "index.noun").write_text("".join(lines))
    (folder / "lexnames").write_text("00\tadj.all\t3\n")
    for name in EMPTY_WORDNET:
        (folder / name).write_text("")


def write_cvse_folder(regions: Path, out: Path) -> None:
    """`out`: `regions`' files (linked), the image ids, CVSE's concept files and the WordNet folder (the
    module docstring)."""
    out.mkdir(parents=True, exist_ok=True)
    if not (out / "vocab.json").exists():
        (out / "vocab.json").symlink_to(regions / "vocab.json")
    captions = {s: (regions / f"{s}_caps.txt").read_text().splitlines() for s in SPLIT_FILES}
    for split in SPLIT_FILES:
        for suffix in LINKED:
            if not (out / f"{split}{suffix}").exists():
                (out / f"{split}{suffix}").symlink_to(regions / f"{split}{suffix}")
        n = np.load(regions / f"{split}_ims.npy", mmap_mode="r").shape[0]
        (out / f"{split}_ids.txt").write_text("".join(f"{i}\n" for i in range(n)))
    nouns = content_words([c for s in SPLIT_FILES for c in captions[s]])
    write_wordnet(out / WORDNET, nouns)
    lemmatizer = NounLemmatizer(frozenset(nouns), {})
    train = captions["train"]
    named = Counter(lemma for c in train for lemma in {lemmatizer.lemma(w) for w in content_words([c])})
    words = sorted(named, key=lambda w: (-named[w], w))
    index = {w: k for k, w in enumerate(words)}
    present = np.zeros((len(train), len(words)), np.int32)
    for row, caption in enumerate(train):
        present[row, caption_concepts(caption, lemmatizer, index)] = 1
    cooccurrence = present.T @ present
    np.fill_diagonal(cooccurrence, 0)
    graph = {"nums": present.sum(0), "adj_O_P": cooccurrence.copy(), "adj_O_M": cooccurrence.copy()}
    graph["adj_all"] = cooccurrence
    per_image = len(train) // np.load(regions / "train_ims.npy", mmap_mode="r").shape[0]
    labels = [
        {"img_id": str(i), "concept_labels": sorted(set(np.flatnonzero(present[rows].any(0)).tolist()))}
        for i, rows in enumerate(np.arange(len(train)).reshape(-1, per_image))
    ]
    vectors = np.random.default_rng(0).normal(0.0, VECTOR_SD, (len(words), VECTOR_DIM))
    concepts = out / CONCEPTS
    concepts.mkdir(exist_ok=True)
    (concepts / NAMES_FILE).write_text(json.dumps(index))
    (concepts / LABELS_FILE).write_text(json.dumps(labels))
    for name, value in ((ADJ_FILE, graph), (VECTORS_FILE, vectors)):
        with (concepts / name).open("wb") as f:
            pickle.dump(value, f)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--regions", type=Path, required=True, help="a precomp folder of the parity makers")
    parser.add_argument("--out", type=Path, required=True, help="the folder CVSE reads (created)")
    args = parser.parse_args()
    write_cvse_folder(args.regions, args.out)


if __name__ == "__main__":
    main()
