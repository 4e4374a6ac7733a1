"""Shard planning, atomic piece writes with rejects, completion markers and clean-up of partial shards."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from vse_ray.data.store.schema import features_table
from vse_ray.data.store.shards import (
    ShardLedger,
    current_node,
    plan_shards,
    record_pieces,
    shard_input,
    write_pieces,
)


def test_plan_shards_covers_rows_once():
    shards = plan_shards("val", 10, 4)
    assert [(s.start, s.stop) for s in shards] == [(0, 4), (4, 8), (8, 10)]
    assert shards[2].key == "val-00000008"
    with pytest.raises(ValueError, match="shard_size"):
        plan_shards("val", 10, 0)


def test_write_pieces_splits_by_shard_and_lists_rejects(tmp_path):
    shards = plan_shards("train", 10, 4)
    columns = {
        "image_id": np.arange(10, dtype=np.int64) + 100,
        "ref": np.array([f"f{i}.jpg" for i in range(10)]),
    }
    tables = [shard_input(s, columns) for s in shards[:2]]
    batch = {
        n: np.concatenate([t[n].to_numpy(zero_copy_only=False) for t in tables])
        for n in tables[0].column_names
    }
    batch["reject"] = np.array(["", "corrupt image: x", "", "", "", "", "", ""], dtype=object)
    batch["feature"] = np.tile(batch["row"][:, None].astype(np.float32), (1, 3))
    batch["_node_model"] = np.array(["n1"] * 6 + ["n2"] * 2)  # the actor that computed each row
    summary = write_pieces(
        batch, table_dir=str(tmp_path / "features"), to_table=lambda b: features_table(b, False)
    )
    assert summary["file"].tolist() == [
        "features/split=train/part-00000000.parquet",
        "features/split=train/part-00000004.parquet",
    ]
    assert summary["n_in"].tolist() == [4, 4] and summary["rows"].tolist() == [3, 4]
    assert json.loads(summary["rejects"][0]) == [
        {"image_id": 101, "path": "f1.jpg", "reason": "corrupt image: x"}
    ]
    table = pq.read_table(tmp_path / "features" / "split=train" / "part-00000000.parquet")
    assert table["image_id"].to_pylist() == [100, 102, 103]
    assert table.schema.field("feature").type.list_size == 3
    assert [json.loads(n)["model"] for n in summary["nodes"]] == [["n1"], ["n1", "n2"]]
    assert "_node_model" not in table.column_names

    ledger = ShardLedger(tmp_path, "features")
    rows = [{k: v[i] for k, v in summary.items()} for i in range(2)]
    with pytest.raises(RuntimeError, match=r"train-00000008"):  # the third shard never arrived
        record_pieces(rows, ledger, shards)
    assert (
        ledger.is_complete(shards[0]) and ledger.is_complete(shards[1]) and not ledger.is_complete(shards[2])
    )
    marker = ledger.markers("train")[0]
    assert marker["rows"] == 3 and marker["rejects"][0]["image_id"] == 101
    # written by this process: its Ray node when an earlier test of the session started Ray, else ""
    assert marker["nodes"] == {"model": ["n1"], "write": [current_node()]}


def test_pending_deletes_leftovers_of_incomplete_shards(tmp_path):
    ledger = ShardLedger(tmp_path, "features")
    shards = plan_shards("train", 8, 4)
    folder = tmp_path / "features" / "split=train"
    folder.mkdir(parents=True)
    for name in ("part-00000000.parquet", "part-00000004.parquet", "part-00000006.parquet"):
        (folder / name).write_bytes(b"x")
    ledger.complete(
        shards[0],
        [{"rows": 4, "file": "features/split=train/part-00000000.parquet", "sha256": "s", "rejects": "[]"}],
    )
    assert ledger.pending(shards) == [shards[1]]
    assert sorted(p.name for p in folder.iterdir()) == ["part-00000000.parquet"]
