"""Released vocabularies (JSON, pickled Vocabulary) read without running code, and the released tokenizer."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import nltk
import numpy as np
import pytest

from vse_ray.data.precompute import run as precompute_module
from vse_ray.data.precompute.config import PrecomputeConfig
from vse_ray.data.precompute.official_vocab import ReleasedTokenizer, ladder_tokens_file, read_vocab_file
from vse_ray.data.precompute.run import precompute
from vse_ray.data.precompute.vocab import encode

FIXTURES = Path(__file__).parents[2] / "fixtures" / "official"
WORDS = ["<pad>", "<start>", "<end>", "<unk>", "a", "dog", "'s", "ball", ",", "."]


class Vocabulary:
    """The released codes' class, as their vocab.py defines it (word2idx, idx2word, idx)."""

    def __init__(self) -> None:
        self.word2idx: dict[str, int] = {}
        self.idx2word: dict[int, str] = {}
        self.idx = 0

    def add_word(self, word: str) -> None:
        self.word2idx[word], self.idx2word[self.idx] = self.idx, word
        self.idx += 1


def _released_vocab() -> Vocabulary:
    vocab = Vocabulary()
    for word in WORDS:
        vocab.add_word(word)
    return vocab


def _json_file(tmp_path, word2idx: dict) -> str:
    path = tmp_path / "f30k_precomp_vocab.json"  # serialize_vocab's layout
    path.write_text(json.dumps({"word2idx": word2idx, "idx2word": {}, "idx": len(word2idx)}))
    return str(path)


def test_json_vocabulary_keeps_its_ids_and_special_tokens(tmp_path):
    vocab = read_vocab_file(_json_file(tmp_path, _released_vocab().word2idx))
    assert vocab == {w: i for i, w in enumerate(WORDS)}
    # <start> 1, <end> 2, <unk> 3 as the file numbers them, not vse_ray's own order
    np.testing.assert_array_equal(encode("a dog 's cat", vocab), [1, 4, 5, 6, 3, 2])


@pytest.mark.parametrize("protocol", [0, 2, pickle.HIGHEST_PROTOCOL])
def test_pickled_vocabulary_is_read_without_its_class(tmp_path, protocol):
    path = tmp_path / "f30k_precomp_vocab.pkl"
    path.write_bytes(pickle.dumps(_released_vocab(), protocol))
    assert read_vocab_file(path) == {w: i for i, w in enumerate(WORDS)}


class Payload:
    def __reduce__(self):
        return (os.system, ("echo ran",))


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (pickle.dumps(Payload()), "holds the type posix.system"),
        (pickle.dumps({"word2idx": {"a": 0}})[:-3], "not a readable pickle vocabulary"),
        (b'{"word2idx": ', "not a readable JSON vocabulary"),
        (b'["a", "b"]', "expected a Vocabulary (word2idx, idx2word, idx)"),
        (json.dumps({"word2idx": {"<pad>": 0, "a": 2}}).encode(), "expected ids 0..1 once each"),
        (json.dumps({"word2idx": {"<pad>": 0, "a": 1}}).encode(), "found none for ['<start>', '<end>'"),
        (
            json.dumps({"word2idx": {w: (i + 1) % 4 for i, w in enumerate(WORDS[:4])}}).encode(),
            "'<pad>' at id 0",
        ),
    ],
)
def test_bad_vocabulary_files_are_one_line(tmp_path, content, fragment):
    path = tmp_path / "vocab.file"
    path.write_bytes(content)
    with pytest.raises(ValueError, match="vocab .*vocab.file: ") as err:
        read_vocab_file(path)
    assert fragment in str(err.value) and "\n" not in str(err.value)


# Captions punkt reads as one sentence: punctuation, quotes, possessives, contractions, a final period.
ONE_SENTENCE = [
    "A man in a red shirt is riding a bike.",
    'A dog\'s "toy", a ball, lies on the grass!',
    "Two kids (a boy and a girl) can't reach the 3.5 m high shelf",
    "A woman -- smiling -- holds a sign that says `` welcome '' ...",
    "People at the U.S.A; tennis players wait?  ",
    "a dog named 'max' plays 1.5 hours",
]
SEVERAL_SENTENCES = ["A man sits. He reads.", "Is it raining? yes", "a dog! (running)", "a st. bernard"]


def test_tokens_equal_word_tokenize_on_one_sentence_captions(monkeypatch):
    """Without punkt's data, nltk's word tokenizer alone: the same tokens as word_tokenize wherever punkt has
    no sentence end to decide (punkt's untrained tokenizer stands in for its data here)."""
    monkeypatch.setattr(nltk.tokenize, "_get_punkt_tokenizer", lambda language: nltk.PunktSentenceTokenizer())
    tokenizer = ReleasedTokenizer()
    tokenizer._punkt = False
    for caption in ONE_SENTENCE:
        assert tokenizer(caption).split() == nltk.word_tokenize(caption.lower()), caption
    for caption in SEVERAL_SENTENCES:
        with pytest.raises(
            ValueError, match="punkt data, not installed here; install it with `python -m nltk"
        ):
            tokenizer.check([caption])


def test_a_caption_punkt_might_split_stops_precompute_before_ray(tmp_path, monkeypatch):
    def no_punkt(text: str, language: str = "english") -> list[str]:
        raise LookupError("punkt_tab not found")

    monkeypatch.setattr(nltk.tokenize, "sent_tokenize", no_punkt)
    monkeypatch.setattr(precompute_module, "ensure_ray", _ray_must_not_start)
    source = tmp_path / "precomp"
    source.mkdir()
    for split in ("train", "dev", "test"):  # the precomp layout's names
        np.save(source / f"{split}_ims.npy", np.zeros((2, 4), dtype=np.float32))
        captions = ["a dog runs"] * 10
        if split == "dev":
            captions[7] = "A man sits. He reads."
        (source / f"{split}_caps.txt").write_text("\n".join(captions) + "\n")
    vocab = _json_file(tmp_path, _released_vocab().word2idx)
    config = PrecomputeConfig(dataset="precomp", precomp_dir=str(source), vocab_file=vocab)
    with pytest.raises(ValueError, match=r"caption 'a man sits. he reads.': may hold more than one sentence"):
        precompute(config, str(tmp_path / "out"), verbose=False)
    assert not (tmp_path / "out").exists()


def _ray_must_not_start(*args: object) -> None:
    raise AssertionError("Ray started before the captions were checked")


def test_released_ids_of_flickr30k_captions(tmp_path):
    """1,000 Flickr30K test captions: the ids SGRAF's own vocab.py and data.py give with its
    f30k_precomp_vocab.json (tests/fixtures/official/README.md) are vse_ray's, on the path without punkt."""
    fixture = np.load(FIXTURES / "f30k_token_ids_official.npz")
    path = tmp_path / "f30k_precomp_vocab.json"
    path.write_text(str(fixture["vocab_json"]))
    vocab = read_vocab_file(path)
    assert len(vocab) == 8481
    tokenizer = ReleasedTokenizer()
    tokenizer._punkt = False
    ids = [encode(tokenizer(str(c)), vocab) for c in fixture["captions"]]
    np.testing.assert_array_equal([len(x) for x in ids], fixture["lengths"])
    np.testing.assert_array_equal(np.concatenate(ids), fixture["ids"])


def test_the_ladder_codes_vocabulary_and_ids_of_flickr30k_captions(tmp_path):
    """cdluminate/ladderloss's own lingual.py on 1,000 Flickr30K captions (tests/fixtures/official/README.md):
    its tokens file read as the vocabulary, and the captions tokenised with its punctuation removal, give the
    ids its CocoLtokDataset gives, on the path without punkt."""
    fixture = np.load(FIXTURES / "ladder_vocab_official.npz")
    path = tmp_path / "f30k.all.toks"
    path.write_text(str(fixture["toks_json"]))
    vocab = read_vocab_file(path)
    assert len(vocab) == int(fixture["vocab_size"]) == 370 and ladder_tokens_file(path)
    assert [vocab[w] for w in ("<pad>", "<start>", "<end>", "<unk>")] == [0, 1, 2, 3]
    tokenizer = ReleasedTokenizer(strip_punctuation=True)
    tokenizer._punkt = False
    captions = [str(c) for c in fixture["captions"]]
    tokenizer.check(captions)  # no sentence end is left for punkt to decide
    ids = [encode(tokenizer(c), vocab) for c in captions]
    np.testing.assert_array_equal([len(x) for x in ids], fixture["lengths"])
    np.testing.assert_array_equal(np.concatenate(ids), fixture["ids"])
    assert "\\" in tokenizer("a man\\woman, hooded")  # the backslash is not in the ladder code's class
    assert not ladder_tokens_file(_json_file(tmp_path, _released_vocab().word2idx))
