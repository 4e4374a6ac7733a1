"""Bad input fails early with one readable line (traceback only with --debug), and starts nothing."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.support.cli import one_error_line, run_cli
from tests.support.tiny_store import write_tiny_store
from vse_ray.data.store.verify import verify_data_dir


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return write_tiny_store(tmp_path_factory.mktemp("cli") / "tiny")


@pytest.mark.parametrize(
    ("loss", "params", "fragment"),
    [
        ("ladder_auto", ["l_min=4", "l_max=2"], "l_max must be >= l_min"),
        ("sam", ["tau=0"], "tau must be > 0"),
        ("vsepp", ["margin=-0.1"], "margin must be >= 0"),
        ("vsepp", ["margn=0.2"], "unknown hyper-parameter(s) ['margn']"),
    ],
)
def test_train_rejects_bad_loss_params_before_anything_starts(store, tmp_path, loss, params, fragment):
    args = ["train", "--data", str(store), "--loss", loss, "--output-dir", str(tmp_path / "out")]
    result = run_cli(args + [a for p in params for a in ("--param", p)])
    one_error_line(result, fragment)
    assert not (tmp_path / "out").exists()  # no MLflow store, no experiment, no Ray results


@pytest.mark.parametrize("command", ["train", "sweep"])
def test_a_val_split_smaller_than_the_largest_cutoff_is_refused_before_ray(store, tmp_path, command):
    # the tiny store has 20 val images: R@25 cannot be computed on them
    data = ["--data", str(store)] if command == "train" else ["--data-dir", str(store), "--space", "vsepp"]
    args = [command, *data, "--set", "eval_ks=[1, 5, 25]", "--output-dir", str(tmp_path / "out")]
    one_error_line(
        run_cli(args),
        f"data folder {store}: split 'val' has 20 images, fewer than the largest R@K cut-off (eval_ks",
        "precompute at least 25 val images",
    )
    assert not list((tmp_path / "out").glob("*"))  # no MLflow store, no Ray results


def test_missing_data_folder_names_it(tmp_path):
    result = run_cli(["train", "--data", str(tmp_path / "nope"), "--output-dir", str(tmp_path / "out")])
    one_error_line(result, str(tmp_path / "nope"), "does not exist")
    assert not (tmp_path / "out").exists()


def test_debug_shows_the_exception(tmp_path):
    result = run_cli(["train", "--data", str(tmp_path / "nope"), "--debug"])
    assert result.exit_code != 0 and isinstance(result.exception, ValueError)


def test_unfinished_precompute_is_refused(store, tmp_path):
    """The reproduction of the bug: no manifest.json and only part of the caption shards."""
    broken = shutil.copytree(store, tmp_path / "broken")
    (broken / "manifest.json").unlink()
    result = run_cli(["train", "--data", str(broken), "--output-dir", str(tmp_path / "out")])
    one_error_line(result, "no manifest.json", "did not finish")
    assert not (tmp_path / "out").exists()


def test_files_are_checked_against_the_manifest(store, tmp_path):
    assert verify_data_dir(store).images == {"train": 96, "val": 20, "test": 20}
    folder = shutil.copytree(store, tmp_path / "f")
    shard = next((folder / "captions" / "split=train").glob("*.arrow"))
    shard.rename(shard.with_name("part-9.arrow"))
    with pytest.raises(ValueError, match=r"missing, e\.g\. captions/split=train/part-00000000\.arrow"):
        verify_data_dir(folder)
    shard.with_name("part-9.arrow").rename(shard)
    manifest = json.loads((folder / "manifest.json").read_text())
    key = "relevance/val/cider/part-00000000.parquet"
    manifest["shards"][key]["sha256"] = "0" * 64
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="cider/part-00000000.parquet: sha256 .* differs"):
        verify_data_dir(folder)
    manifest["shards"][key]["rows"] = 3
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="cider/part-00000000.parquet: 20 rows, manifest.json lists 3"):
        verify_data_dir(folder)


def test_evaluate_unknown_run_creates_no_store(tmp_path):
    result = run_cli(["evaluate", "--run", "0123abcd", "--output-dir", str(tmp_path / "out")])
    one_error_line(result, "'0123abcd' is neither a checkpoint path nor a run id")
    assert not (tmp_path / "out" / "mlflow.db").exists()


def test_demo_rejects_unknown_loss(tmp_path):
    result = run_cli(["demo", "--losses", "vsepp,vspp", "--output-dir", str(tmp_path / "demo")])
    assert result.exit_code != 0 and "vspp" in result.output
    assert not (tmp_path / "demo").exists()


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b'[{"images": []}]', "the top level is a JSON list, expected an object with an 'images' list"),
        ('{"images": "caf\u00e9"}'.encode("latin-1"), "expected a UTF-8 JSON file"),
        (b'{"images": [1]}', "images[0] is a int, expected an object"),
    ],
)
def test_bad_karpathy_json_is_one_line_naming_the_file(tmp_path, content, fragment):
    path = tmp_path / "dataset_coco.json"
    path.write_bytes(content)
    args = ["precompute", "--out", str(tmp_path / "o"), "--dataset", "karpathy"]
    result = run_cli(args + ["--karpathy-json", str(path), "--image-root", str(tmp_path)])
    one_error_line(result, str(path), fragment)
    assert not (tmp_path / "o").exists()
