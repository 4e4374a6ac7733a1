"""Vocabulary from train only, config resolution and hash, and the guard against mixing configs."""

from __future__ import annotations

import pytest

from vse_ray.data.config import PrecomputeConfig
from vse_ray.data.manifest import claim_output
from vse_ray.data.vocab import END, START, UNK, build_vocab, encode


def test_vocab_keeps_frequent_words_after_special_tokens():
    vocab = build_vocab(["a red ball", "a blue ball", "a red box"], min_count=2)
    assert list(vocab) == ["<pad>", "<unk>", "<start>", "<end>", "a", "ball", "red"]
    assert encode("a green ball", vocab).tolist() == [START, 4, UNK, 5, END]


def test_config_resolves_per_dataset_and_hash_tracks_outputs():
    synthetic = PrecomputeConfig().resolved()
    assert (synthetic.cnn, synthetic.weights, synthetic.crop, synthetic.keep_images) == (
        "resnet18",
        None,
        None,
        True,
    )
    real = PrecomputeConfig(dataset="karpathy", karpathy_json="j", image_root="r").resolved()
    assert (real.cnn, real.weights, real.resize, real.crop, real.keep_images) == (
        "resnet152",
        "IMAGENET1K_V1",
        256,
        224,
        False,
    )
    assert PrecomputeConfig().hash() == PrecomputeConfig(cnn="resnet18").hash()  # auto == its resolution
    assert PrecomputeConfig().resolved().relevance_sources == ("sbert", "cider", "svd", "scene")
    precomp = PrecomputeConfig(dataset="precomp", precomp_dir="/x").resolved()
    assert precomp.relevance_sources == ("sbert", "cider", "svd")
    assert PrecomputeConfig().hash() != PrecomputeConfig(n_train=10).hash()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dataset": "coco"}, "dataset must be one of"),
        ({"dataset": "karpathy"}, "needs karpathy_json and image_root"),
        ({"dataset": "precomp"}, "needs precomp_dir"),
        ({"relevance_sources": ("sbert", "bleu")}, "unknown source 'bleu'"),
        (
            {"dataset": "precomp", "precomp_dir": "/x", "relevance_sources": ("sbert", "scene")},
            "'scene' needs the synthetic dataset",
        ),
        ({"shard_size": 0}, "shard_size must be >= 1"),
        ({"splits": ("val", "test")}, "splits must include 'train'"),
    ],
)
def test_config_errors_name_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        PrecomputeConfig(**kwargs).resolved()


def test_changed_config_is_refused_unless_overwrite(tmp_path):
    out = tmp_path / "out"
    claim_output(out, PrecomputeConfig(n_train=10), overwrite=False)
    (out / "features").mkdir()
    claim_output(out, PrecomputeConfig(n_train=10), overwrite=False)  # same config: resume
    assert (out / "features").exists()
    with pytest.raises(ValueError, match="written with another config .*--overwrite"):
        claim_output(out, PrecomputeConfig(n_train=11), overwrite=False)
    claim_output(out, PrecomputeConfig(n_train=11), overwrite=True)
    assert not (out / "features").exists()


@pytest.mark.parametrize("overwrite", [False, True])
def test_foreign_folder_is_refused_and_never_deleted(tmp_path, overwrite):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="holds no vse_ray precompute .*deletes only vse_ray folders"):
        claim_output(tmp_path, PrecomputeConfig(), overwrite=overwrite)
    assert (tmp_path / "notes.txt").read_text() == "mine"
