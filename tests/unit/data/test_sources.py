"""Input readers: Karpathy JSON and precomp folders, and every bad-input error naming file and row."""

from __future__ import annotations

import json
import logging
import re

import numpy as np
import pytest

from tests.unit.data.conftest import write_karpathy, write_precomp
from vse_ray.data.precompute.config import PrecomputeConfig
from vse_ray.data.sources.karpathy import read_karpathy
from vse_ray.data.sources.precomp import read_precomp, read_precomp_rows
from vse_ray.data.sources.source import MAX_CAPTION_CHARS
from vse_ray.data.store.schema import captions_table
from vse_ray.relevance.cider_columns import cider_vectoriser
from vse_ray.relevance.cider_doc_freq import cider_doc_freq


def test_karpathy_restval_goes_to_train_and_keeps_five_captions(tmp_path):
    path = write_karpathy(tmp_path, {"train": 2, "restval": 2, "val": 1, "test": 1}, captions=6)
    splits = read_karpathy(str(path), ("train", "val", "test"))
    assert splits["train"].image_ids.tolist() == [100, 101, 102, 103]
    assert splits["train"].refs[0] == "val2014/img0.png"
    assert all(len(c) == 5 for c in splits["train"].captions)
    assert splits["train"].caption_ids[1].tolist() == [6, 7, 8, 9, 10]  # sentids; the 6th caption is dropped
    assert "an extra sixth caption" not in {c for caps in splits["train"].captions for c in caps}


def test_karpathy_without_restval_trains_on_train_only(tmp_path):
    path = write_karpathy(tmp_path, {"train": 2, "restval": 2, "val": 1, "test": 1})
    splits = read_karpathy(str(path), ("train", "val", "test"), restval=False)
    assert splits["train"].image_ids.tolist() == [100, 101]
    assert splits["val"].image_ids.tolist() == [104]


def test_restval_off_is_stored_and_hashed_and_needs_karpathy():
    """`restval` False enters the stored config (and so the hash); at its default it is left out, so folders
    written before the option keep their hash; another dataset than karpathy refuses it."""
    base = PrecomputeConfig(dataset="karpathy", karpathy_json="d.json", image_root="r")
    off = PrecomputeConfig(dataset="karpathy", karpathy_json="d.json", image_root="r", restval=False)
    assert "restval" not in base.resolved().to_dict()
    assert off.resolved().to_dict()["restval"] is False
    assert off.hash() != base.hash()
    with pytest.raises(ValueError, match="restval: False needs the karpathy dataset"):
        PrecomputeConfig(dataset="synthetic", restval=False).resolved()


def _edit(path, row, **changes):
    data = json.loads(path.read_text())
    data["images"][row].update(changes)
    path.write_text(json.dumps(data))


def test_karpathy_too_few_captions_names_file_and_row(karpathy_json):
    data = json.loads(karpathy_json.read_text())
    _edit(karpathy_json, 2, sentences=data["images"][2]["sentences"][:3])
    with pytest.raises(ValueError, match=r"dataset_coco.json: images\[2\] \(img2.png\): has 3 captions"):
        read_karpathy(str(karpathy_json), ("train",))


@pytest.mark.parametrize("blank", ["   ", "\u200b\u200b", "\u200c \u2060\ufeff", "\u00ad\t"])
def test_karpathy_empty_caption_names_file_and_row(karpathy_json, blank):
    """Whitespace, zero-width and other format characters alike (zero-width alone was stored as [2, 3])."""
    sentences = json.loads(karpathy_json.read_text())["images"][4]["sentences"]
    sentences[1]["raw"] = blank
    _edit(karpathy_json, 4, sentences=sentences)
    with pytest.raises(ValueError, match=r"images\[4\] \(img4.png\): caption 1 is empty"):
        read_karpathy(str(karpathy_json), ("train",))


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("a red \x00 circle", "U+0000 at character 6"),
        ("\x00\x01\x02", "U+0000 at character 0"),
        ("a \x1b[31mred circle", "U+001B at character 2"),
    ],
)
def test_karpathy_caption_with_a_control_character_names_file_and_row(karpathy_json, raw, message):
    sentences = json.loads(karpathy_json.read_text())["images"][4]["sentences"]
    sentences[1]["raw"] = raw
    _edit(karpathy_json, 4, sentences=sentences)
    with pytest.raises(
        ValueError, match=rf"images\[4\] \(img4.png\): caption 1 holds the control .*{re.escape(message)}"
    ):
        read_karpathy(str(karpathy_json), ("train",))


def test_captions_are_stored_as_given():
    """A caption reaches its Arrow column whole (a NumPy str array would cut it at a NUL)."""
    texts = ["a red \x00 circle", "tab\tand\nline", "plain"]
    batch = {
        "caption_id": np.arange(3),
        "image_id": np.zeros(3),
        "split": np.array(["train"] * 3),
        "text": np.array(texts, dtype=object),
        "tokens": [np.array([1, 2])] * 3,
        **cider_vectoriser(cider_doc_freq([[t] for t in texts]).to_dict())(texts),
    }
    assert captions_table(batch)["text"].to_pylist() == texts


def test_karpathy_unknown_split_in_file_names_row(karpathy_json):
    _edit(karpathy_json, 1, split="holdout")
    with pytest.raises(ValueError, match=r"images\[1\] has unknown split 'holdout'"):
        read_karpathy(str(karpathy_json), ("train",))


def test_requested_split_that_does_not_exist(tmp_path):
    path = write_karpathy(tmp_path, {"train": 2, "test": 1})
    with pytest.raises(ValueError, match="split 'val' does not exist in .*dataset_coco.json"):
        read_karpathy(str(path), ("train", "val"))
    with pytest.raises(ValueError, match="does not exist"):
        read_karpathy(str(tmp_path / "nope.json"), ("train",))


@pytest.mark.parametrize("per_caption", [False, True])
def test_precomp_reads_features_per_image_or_per_caption(tmp_path, per_caption):
    folder = write_precomp(tmp_path / "pc", {"train": 4, "dev": 2, "test": 3}, per_caption=per_caption)
    splits, features = read_precomp(str(folder), ("train", "val", "test"))
    assert splits["val"].image_ids.tolist() == [4, 5]  # ids run over train, val, test
    assert splits["val"].caption_ids.tolist() == [[20, 21, 22, 23, 24], [25, 26, 27, 28, 29]]
    assert splits["test"].captions[2][4] == "a green shape number 2 caption 4"
    assert features["val"].stride == (5 if per_caption else 1)
    batch = read_precomp_rows(
        {"split": np.array(["test"] * 2), "ref": np.array(["2", "0"])}, features=features
    )
    np.testing.assert_allclose(batch["feature"][:, 0], [2.0, 0.0])
    np.testing.assert_allclose(batch["feature"][0], 2 + np.arange(6) / 10, rtol=1e-6)


def test_precomp_test_split_reads_coco_testall(tmp_path):
    """SCAN's coco_precomp holds 1,000 test images in test_* and all 5,000 in testall_*."""
    folder = write_precomp(tmp_path, {"train": 2, "test": 1, "testall": 3})
    splits, _ = read_precomp(str(folder), ("train", "test"), test_file="testall")
    assert len(splits["test"].image_ids) == 3
    assert len(read_precomp(str(folder), ("train", "test"))[0]["test"].image_ids) == 1
    with pytest.raises(ValueError, match="precomp_test must be one of"):
        PrecomputeConfig(dataset="precomp", precomp_dir=str(folder), precomp_test="all").resolved()


def test_precomp_row_mismatch_names_both_files(tmp_path):
    folder = write_precomp(tmp_path, {"train": 4})
    np.save(folder / "train_ims.npy", np.zeros((3, 6), np.float32))
    with pytest.raises(ValueError, match=r"train_ims.npy: 3 rows do not match .*train_caps.txt"):
        read_precomp(str(folder), ("train",))


def test_precomp_nan_names_file_and_row(tmp_path):
    folder = write_precomp(tmp_path, {"train": 5})
    feats = np.load(folder / "train_ims.npy")
    feats[3, 2] = np.inf
    np.save(folder / "train_ims.npy", feats)
    with pytest.raises(ValueError, match=r"train_ims.npy: row 3 has NaN or inf"):
        read_precomp(str(folder), ("train",))


def test_precomp_empty_caption_and_missing_split(tmp_path):
    folder = write_precomp(tmp_path, {"train": 2})
    lines = (folder / "train_caps.txt").read_text().splitlines()
    lines[7] = ""
    (folder / "train_caps.txt").write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"train_caps.txt: lines 6-10: caption 2 is empty"):
        read_precomp(str(folder), ("train",))
    with pytest.raises(ValueError, match="split 'test' does not exist"):
        read_precomp(str(folder), ("train", "test"))


def test_a_caption_over_the_maximum_is_cut_with_a_warning_naming_it(tmp_path, caplog):
    path = write_karpathy(tmp_path, {"train": 2, "val": 1})
    data = json.loads(path.read_text())
    huge = " ".join(f"word{i % 7}" for i in range(200_000))  # about 1.2 MB, 200,000 tokens
    data["images"][1]["sentences"][2]["raw"] = huge
    path.write_text(json.dumps(data))
    with caplog.at_level(logging.WARNING):
        splits = read_karpathy(str(path), ("train", "val"))
    caption = splits["train"].captions[1][2]
    assert len(caption) <= MAX_CAPTION_CHARS and huge.startswith(caption + " ")
    assert splits["train"].captions[0] == tuple(s["raw"] for s in data["images"][0]["sentences"][:5])
    [record] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert record.getMessage() == (
        f"1 caption(s) longer than {MAX_CAPTION_CHARS} characters cut to that length (docs/data.md), e.g. "
        f"{path}: images[1] (img1.png): caption 2 ({len(huge):,} characters)"
    )
