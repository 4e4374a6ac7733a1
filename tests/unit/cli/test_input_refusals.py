"""Hostile or unlucky input is refused in one line naming the file, key or row, before Ray starts."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.cli import one_error_line, run_cli
from tests.support.tiny_store import write_tiny_store
from tests.unit.data.conftest import write_karpathy, write_precomp
from vse_ray.data.store.verify import check_finite_features, describe_folder


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return write_tiny_store(tmp_path_factory.mktemp("refusals") / "tiny")


@pytest.mark.parametrize("name", ["../../x", "a/b", ".hidden"])
def test_a_run_name_that_leaves_the_output_folder_is_refused(store, tmp_path, name):
    out = tmp_path / "deep" / "out"
    result = run_cli(["train", "--data", str(store), "--output-dir", str(out), "--run-name", name])
    one_error_line(result, "run_name: expected one folder name", repr(name))
    assert not out.exists() and not (tmp_path / "x").exists()


def _copy(store, tmp_path):
    shutil.copytree(store, tmp_path / "data")
    return tmp_path / "data"


@pytest.mark.parametrize("name", ["vocab.json", "cider_df.json"])
def test_a_corrupt_model_file_is_refused_before_ray_starts(store, tmp_path, name):
    data = _copy(store, tmp_path)
    (data / name).write_text((data / name).read_text()[:-5])
    result = run_cli(["train", "--data", str(data), "--output-dir", str(tmp_path / "out")])
    one_error_line(result, str(data / name), "sha256 differs from manifest.json")
    assert not (tmp_path / "out").exists()
    (data / name).unlink()
    result = run_cli(["train", "--data", str(data), "--output-dir", str(tmp_path / "out")])
    one_error_line(result, str(data / name), "is missing; manifest.json lists it")


def _karpathy(tmp_path, change):
    path = write_karpathy(tmp_path, {"train": 3, "val": 2})
    document = json.loads(path.read_text())
    change(document["images"])
    path.write_text(json.dumps(document))
    return path


def _set(row, key, value):
    def change(images):
        images[row][key] = value

    return change


def _no_sentid(images):
    del images[1]["sentences"][2]["sentid"]


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        (_set(1, "sentences", "a dog"), "images[1].sentences is a str, expected a list"),
        (_set(2, "split", ["train"]), "images[2].split is ['train'], expected a string"),
        (_set(0, "imgid", "abc"), "images[0].imgid is 'abc', expected an integer"),
        (_set(0, "filename", 7), "images[0].filename is 7, expected a string"),
        (_no_sentid, "images[1].sentences[2].sentid is None, expected an integer"),
        (_set(3, "imgid", 101), "1 imgid(s) occur more than once (each would map two captions or images"),
        (_set(4, "sentences", [{"raw": "a b", "sentid": 0}] * 5), "sentid 0 in images[0, 4"),
    ],
)
def test_karpathy_fields_are_checked_and_ids_are_unique(tmp_path, change, fragment):
    path = _karpathy(tmp_path, change)
    args = ["precompute", "--out", str(tmp_path / "o"), "--dataset", "karpathy", "--karpathy-json", str(path)]
    result = run_cli([*args, "--image-root", str(tmp_path / "images"), "--splits", "train,val"])
    one_error_line(result, str(path), fragment)
    assert not (tmp_path / "o").exists()


def test_a_missing_train_caption_is_refused_naming_its_image(store, tmp_path):
    data = _copy(store, tmp_path)
    shard = sorted((data / "captions" / "split=train").glob("part-*.arrow"))[0]
    table = pa.ipc.open_file(shard).read_all()
    with pa.ipc.new_file(shard, table.schema) as writer:
        writer.write_table(table.slice(1))  # the first image loses one caption
    manifest = json.loads((data / "manifest.json").read_text())
    (data / "manifest.json").write_text(json.dumps({**manifest, **describe_folder(data)}))
    result = run_cli(["train", "--data", str(data), "--output-dir", str(tmp_path / "out")])
    image_id = table["image_id"][0].as_py()
    one_error_line(result, "split=train: 1 image(s) have another number of captions", f"image_id {image_id}")


def test_a_run_name_mlflow_cannot_filter_is_refused_before_ray_starts(store, tmp_path):
    out = tmp_path / "out"
    result = run_cli(["train", "--data", str(store), "--output-dir", str(out), "--run-name", 'bob\'s "run"'])
    one_error_line(result, "run_name: ", "holds both ' and \"")
    assert not out.exists()


@pytest.mark.parametrize(
    ("table", "content", "kind"),
    [
        ("captions", b"garbage", "Arrow IPC"),
        ("captions", b"ARROW1" + b"\0" * 20, "Arrow IPC"),
        ("relevance/val/sbert", b"PAR1" + b"\0" * 20, "Parquet"),
    ],
)
def test_a_garbage_or_truncated_shard_is_named(store, tmp_path, table, content, kind):
    data = _copy(store, tmp_path)
    shard = sorted((data / table).glob("**/part-*.*"))[0]
    shard.write_bytes(content)
    result = run_cli(["train", "--data", str(data), "--output-dir", str(tmp_path / "out")])
    one_error_line(result, str(shard), f"not a readable {kind} file")


def _precomp_args(folder, out):
    return ["precompute", "--out", str(out), "--dataset", "precomp", "--precomp-dir", str(folder)]


def test_a_caps_file_that_is_not_utf8_is_named_with_its_line(tmp_path):
    folder = write_precomp(tmp_path / "pc", {"train": 3, "dev": 2})
    caps = folder / "train_caps.txt"
    lines = caps.read_text().splitlines()
    lines[6] = "un caf\u00e9"
    caps.write_bytes("\n".join(lines).encode("latin-1"))
    result = run_cli([*_precomp_args(folder, tmp_path / "o"), "--splits", "train,val"])
    one_error_line(result, str(caps), "line 7 is not UTF-8")
    assert not (tmp_path / "o").exists()


def test_a_features_file_that_is_not_npy_is_named(tmp_path):
    folder = write_precomp(tmp_path / "pc", {"train": 3, "dev": 2})
    (folder / "dev_ims.npy").write_bytes(b"\x93NUMPY garbage")
    result = run_cli([*_precomp_args(folder, tmp_path / "o"), "--splits", "train,val"])
    one_error_line(result, str(folder / "dev_ims.npy"), "not a readable .npy array")


def test_a_recipe_with_a_list_for_model_names_file_and_key(store, tmp_path):
    recipe = tmp_path / "mine.yaml"
    recipe.write_text("train:\n  model: [vsepp]\n  loss: vsepp\n")
    result = run_cli(
        ["train", "--data", str(store), "--recipe", str(recipe), "--output-dir", str(tmp_path / "o")]
    )
    assert result.exit_code == 2  # a bad --recipe is a usage error, shown in typer's box
    text = "".join(result.output.replace("│", "").split())
    assert "mine.yaml:model:mustbeoneof" in text and "got['vsepp']" in text


def test_nan_features_are_caught_by_the_data_check_with_the_row(store, tmp_path):
    data = _copy(store, tmp_path)
    shard = sorted((data / "features" / "split=train").glob("part-*.parquet"))[0]
    table = pq.read_table(shard)
    features = np.stack(table["feature"].to_numpy(zero_copy_only=False)).astype(np.float32)
    features[3, 5] = np.nan
    column = pa.FixedSizeListArray.from_arrays(pa.array(features.ravel()), features.shape[1])
    pq.write_table(table.set_column(table.schema.get_field_index("feature"), "feature", column), shard)
    manifest = json.loads((data / "manifest.json").read_text())
    (data / "manifest.json").write_text(json.dumps({**manifest, **describe_folder(data)}))
    result = run_cli(["train", "--data", str(data), "--output-dir", str(tmp_path / "out")])
    image_id = table["image_id"][3].as_py()
    one_error_line(result, str(shard), f"row 3 (image_id {image_id}) has NaN or infinite features")
    assert not (tmp_path / "out").exists()


def test_nan_in_region_features_names_the_row(tmp_path):
    regions = np.zeros((4, 2, 3), dtype=np.float16)
    regions[2, 1, 0] = np.inf
    inner = pa.FixedSizeListArray.from_arrays(pa.array(regions.ravel()), 3)
    table = pa.table(
        {"image_id": pa.array([10, 11, 12, 13]), "feature": pa.FixedSizeListArray.from_arrays(inner, 2)}
    )
    path = tmp_path / "features" / "split=train" / "part-00000000.arrow"
    path.parent.mkdir(parents=True)
    with pa.ipc.new_file(path, table.schema) as writer:
        writer.write_table(table)
    with pytest.raises(ValueError, match=r"row 2 \(image_id 12\) has NaN or infinite features"):
        check_finite_features(tmp_path, ["features/split=train/part-00000000.arrow"])


def test_a_study_missing_the_folders_it_requires_stops_before_ray(store, tmp_path):
    """`clip_graded` names the user's data folder and towers (`requires`): without them, or with weights
    that are not there, one line and nothing written."""
    out = tmp_path / "out"
    result = run_cli(["study", "clip_graded", "--output-dir", str(out)])
    one_error_line(result, "clip_graded.yaml: data.data_dir: required: ", "give it with --set data.data_dir=")
    towers = tmp_path / "towers"
    sets = ["--set", f"data.data_dir={store}", "--set", f"train.model_params.pretrained={towers}"]
    result = run_cli(["study", "clip_graded", "--output-dir", str(out), *sets])
    one_error_line(result, f"model_params.pretrained {towers}: no such file or folder")
    assert not out.exists()
