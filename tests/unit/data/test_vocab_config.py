"""Vocabulary from train only, config resolution and hash, and the guard against mixing configs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.support.tiny_store import write_tiny_store
from vse_ray.data.precompute.concepts import write_concepts
from vse_ray.data.precompute.config import ExecutionOptions, PrecomputeConfig
from vse_ray.data.precompute.manifest import FORMAT, STATE_CONFIG, claim_output
from vse_ray.data.precompute.run import claim_precompute
from vse_ray.data.precompute.vocab import build_vocab, encode
from vse_ray.data.store.schema import SCHEMA_VERSION
from vse_ray.data.store.verify import model_files
from vse_ray.evaluation.image_cache import cache_folder, write_image_cache
from vse_ray.file_lock import FolderLock, release_all
from vse_ray.special_tokens import END, START, UNK


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


def test_a_folder_of_an_earlier_store_layout_is_not_resumed(tmp_path):
    """Schema version 2 wrote captions as Parquet: resuming its folder would mix the two layouts."""
    out = tmp_path / "out"
    claim_output(out, PrecomputeConfig(n_train=10), overwrite=False)
    record = json.loads((out / STATE_CONFIG).read_text())
    assert record["schema_version"] == SCHEMA_VERSION
    del record["schema_version"]  # as version 2 wrote it
    (out / STATE_CONFIG).write_text(json.dumps(record))
    (out / "captions").mkdir()
    with pytest.raises(ValueError, match="layout of schema version 2, .* writes version 3 .*--overwrite"):
        claim_output(out, PrecomputeConfig(n_train=10), overwrite=False)
    assert (out / "captions").exists()
    claim_output(out, PrecomputeConfig(n_train=10), overwrite=True)
    assert not (out / "captions").exists()


@pytest.mark.parametrize("overwrite", [False, True])
def test_foreign_folder_is_refused_and_never_deleted(tmp_path, overwrite):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="holds no vse_ray precompute .*deletes only vse_ray folders"):
        claim_output(tmp_path, PrecomputeConfig(), overwrite=overwrite)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def _web_app(folder):
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "app.js").write_text("console.log(1)")
    (folder / "notes.txt").write_text("mine")
    return sorted(p.relative_to(folder) for p in folder.rglob("*"))


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("manifest.json", '{"name": "my web app"}'),
        ("manifest.json", '{"schema_version": 2}'),
        ("manifest.json", "[1, 2]"),
        ("_state/config.json", '{"name": "my web app"}'),
        ("_state/config.json", '{"config_hash": "abc"}'),
        ("_state/config.json", "not json"),
    ],
)
def test_overwrite_keeps_a_folder_whose_records_vse_ray_did_not_write(tmp_path, name, text):
    kept = _web_app(tmp_path)
    (tmp_path / name).parent.mkdir(exist_ok=True)
    (tmp_path / name).write_text(text)
    with pytest.raises(ValueError, match="holds no vse_ray precompute .*its files are kept"):
        claim_output(tmp_path, PrecomputeConfig(), overwrite=True)
    assert set(kept) <= {p.relative_to(tmp_path) for p in tmp_path.rglob("*")}


def test_overwrite_keeps_foreign_files_inside_a_vse_ray_folder(tmp_path):
    out = tmp_path / "out"
    claim_output(out, PrecomputeConfig(n_train=10), overwrite=False)
    (out / "notes.txt").write_text("mine")
    claim_output(out, PrecomputeConfig(n_train=10), overwrite=False)  # same config: resumes, files stay
    with pytest.raises(ValueError, match="also holds notes.txt, which vse_ray did not write"):
        claim_output(out, PrecomputeConfig(n_train=11), overwrite=True)
    assert (out / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize(
    "name",
    [
        "logs/notes.txt",
        "relevance/mine/results.csv",
        "features/README.txt",
        "_state/mine.json",
        "image_embeddings/clip-1234abcd/notes.txt",
    ],
)
def test_overwrite_keeps_foreign_files_in_the_folders_a_precompute_writes(tmp_path, name):
    out = tmp_path / "out"
    claim_output(out, PrecomputeConfig(n_train=10), overwrite=False)
    write_tiny_store(out)
    (out / name).parent.mkdir(parents=True, exist_ok=True)
    (out / name).write_text("mine")
    with pytest.raises(ValueError, match=f"also holds {name}, which vse_ray did not write"):
        claim_output(out, PrecomputeConfig(n_train=11), overwrite=True)
    assert (out / name).read_text() == "mine" and (out / "manifest.json").is_file()


def test_overwrite_keeps_a_link_under_a_name_vse_ray_writes(tmp_path):
    out = tmp_path / "out"
    claim_output(out, PrecomputeConfig(n_train=10), overwrite=False)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    (out / "features").symlink_to(tmp_path / "mine")
    with pytest.raises(ValueError, match="also holds features, which vse_ray did not write"):
        claim_output(out, PrecomputeConfig(n_train=11), overwrite=True)
    assert (tmp_path / "mine" / "notes.txt").read_text() == "mine"


def test_overwrite_deletes_the_hidden_temporaries_of_an_interrupted_precompute(tmp_path):
    out = tmp_path / "out"
    claim_output(out, PrecomputeConfig(n_train=10), overwrite=False)
    for name in (
        "captions/split=val/.part-00000100.arrow.77.tmp",
        "relevance/val/.cider.123.tmp/.part-00000000.parquet.5.tmp",
        "_state/features/.val-00000000.json.9.tmp",
        ".tfidf_svd.5.tmp.npz",
    ):
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text("partial")
    claim_output(out, PrecomputeConfig(n_train=11), overwrite=True)
    assert [p.name for p in out.iterdir()] == ["_state"]


def test_overwrite_deletes_the_image_cache_evaluate_wrote(tmp_path):
    """``evaluate --image-cache`` (or a locked-image train) writes the cache into the data folder: vse_ray's
    files, finished or interrupted, that --overwrite deletes with the rest."""
    out = tmp_path / "out"
    claim_output(out, PrecomputeConfig(n_train=10), overwrite=False)
    write_tiny_store(out)
    cache = cache_folder(str(out), "clip-1234abcd", "test")
    write_image_cache(cache, np.arange(3), np.ones((3, 4)), "clip", {})
    (cache.parent / ".split=val.77-0a1b2c3d.tmp").mkdir()  # a cache write that was killed
    (cache.parent / ".split=val.77-0a1b2c3d.tmp" / "cache.json").write_text("{}")
    claim_output(out, PrecomputeConfig(n_train=11), overwrite=True)
    assert [p.name for p in out.iterdir()] == ["_state"]


def test_overwrite_deletes_every_file_a_precompute_writes_and_the_manifest_lists_concepts(tmp_path):
    out = tmp_path / "out"
    claim_output(out, PrecomputeConfig(n_train=10), overwrite=False)
    write_tiny_store(out)
    write_concepts(out)
    (out / "logs").mkdir()
    (out / "logs" / "vse_ray.log").write_text("Ray's lines\n")  # the command's log file (vse_ray.log_file)
    assert set(model_files(out)) == {"vocab.json", "cider_df.json", "concepts.npz"}
    claim_output(out, PrecomputeConfig(n_train=11), overwrite=True)
    assert [p.name for p in out.iterdir()] == ["_state"]


TINY_SYNTHETIC = {"n_train": 4, "n_val": 2, "n_test": 2, "cnn": "small", "weights": None}


@pytest.mark.parametrize("overwrite", [False, True])
def test_out_given_as_a_link_names_its_target_folder(tmp_path, overwrite):
    """``--out LINK`` is followed, as train's ``--output-dir`` is: the target is resumed or replaced, the
    link stays; a dangling link creates its target."""
    target, link = tmp_path / "target", tmp_path / "link"
    claim_output(target, PrecomputeConfig(n_train=10), overwrite=False)
    write_tiny_store(target)
    link.symlink_to(target)
    config = PrecomputeConfig(**TINY_SYNTHETIC)
    if not overwrite:
        with pytest.raises(ValueError, match=f"out folder {target} was written with another config"):
            claim_precompute(config, str(link))
        return
    claimed = claim_precompute(config, str(link), ExecutionOptions(overwrite=True))
    assert claimed.folder == target and link.is_symlink()
    assert [p.name for p in target.iterdir()] == ["_state"]
    (tmp_path / "dangling").symlink_to(tmp_path / "new" / "data")
    assert claim_precompute(config, str(tmp_path / "dangling")).folder == tmp_path / "new" / "data"
    assert (tmp_path / "new" / "data" / STATE_CONFIG).is_file()


def test_a_precompute_of_a_folder_a_train_reads_is_refused_and_keeps_it(tmp_path):
    data = tmp_path / "data"
    claim_output(data, PrecomputeConfig(n_train=10), overwrite=False)
    write_tiny_store(data)
    FolderLock(data).acquire().release()  # the lock file a precompute leaves
    reader = FolderLock(data).share()  # a train reading the folder
    config, overwrite = PrecomputeConfig(**TINY_SYNTHETIC), ExecutionOptions(overwrite=True)
    with pytest.raises(ValueError, match=f"out folder {data} is in use by another command .*a train reading"):
        claim_precompute(config, str(data), overwrite, lock=True)
    assert (data / "manifest.json").is_file()
    reader.release()
    claim_precompute(config, str(data), overwrite, lock=True)  # once the train ended
    assert sorted(p.name for p in data.iterdir()) == [".vse_ray.lock", "_state"]
    release_all()


def test_out_that_is_a_file_or_a_link_loop_is_one_line(tmp_path):
    (tmp_path / "file").write_text("mine")
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    config = PrecomputeConfig(**TINY_SYNTHETIC)
    with pytest.raises(ValueError, match=f"--out {tmp_path / 'file'}: .* is not a folder"):
        claim_precompute(config, str(tmp_path / "file"))
    with pytest.raises(ValueError, match="--out .*/a: Symlink loop"):
        claim_precompute(config, str(tmp_path / "a"))
    assert (tmp_path / "file").read_text() == "mine"


def test_overwrite_deletes_a_folder_of_an_earlier_manifest_without_format(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    config = PrecomputeConfig(n_train=10)
    earlier = {"schema_version": 2, "config_hash": config.hash(), "config": {}, "shards": {}}
    (out / "manifest.json").write_text(json.dumps(earlier))
    (out / ".manifest.json.123.tmp").write_text("{}")
    claim_output(out, PrecomputeConfig(n_train=11), overwrite=True)
    assert not (out / "manifest.json").exists()
    record = json.loads((out / STATE_CONFIG).read_text())
    assert record["format"] == FORMAT


def test_input_uris_are_stored_without_credentials():
    def config(root):
        return PrecomputeConfig(dataset="karpathy", karpathy_json="d.json", image_root=root)

    stored = config("s3://AKIA:s3cr3t@bucket/coco").resolved().to_dict()
    assert stored["image_root"] == "s3://bucket/coco" and "s3cr3t" not in json.dumps(stored)
    assert config("s3://AKIA:s3cr3t@bucket/coco").hash() == config("s3://other:key@bucket/coco").hash()
