"""`read_parquet_dataset`: the rows and columns of the shards, read by Ray Data's V1 Parquet reader."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from vse_ray.data.ray_parquet import read_parquet_dataset

pytestmark = pytest.mark.ray


@pytest.fixture()
def shards(tmp_path):
    rng = np.random.default_rng(0)
    for k in range(3):
        ids = np.arange(10 * k, 10 * k + 10)
        table = pa.table({"caption_id": ids, "image_id": ids // 5, "text": [f"c{i}" for i in ids]})
        table = table.append_column("sbert", pa.array(list(rng.standard_normal((10, 4), dtype=np.float32))))
        pq.write_table(table, tmp_path / f"part-{k:05d}.parquet")
    return tmp_path


def test_rows_and_columns_equal_pyarrow(ray_session, shards):
    dataset = read_parquet_dataset(str(shards), ["caption_id", "sbert"])
    got = dataset.to_arrow_refs()
    table = pa.concat_tables(ray_session.get(got)).sort_by("caption_id")
    want = pq.read_table(shards, columns=["caption_id", "sbert"]).sort_by("caption_id")
    assert table.column_names == ["caption_id", "sbert"]
    assert table.column("caption_id").equals(want.column("caption_id"))
    np.testing.assert_array_equal(
        np.stack(table.column("sbert").to_pylist()), np.stack(want.column("sbert").to_pylist())
    )


def test_reads_with_v1_and_leaves_the_context_as_it_was(ray_session, shards):
    context = ray_session.data.DataContext.get_current()
    assert context.use_datasource_v2  # Ray 2.60's default
    stats = read_parquet_dataset(str(shards), ["caption_id"]).stats()
    assert "ReadParquet" in stats and "ListFiles" not in stats  # no footer-reader pool (V2's listing)
    assert context.use_datasource_v2
    with pytest.raises(Exception, match="no_such_folder"):
        read_parquet_dataset(str(shards / "no_such_folder"), ["caption_id"])
    assert context.use_datasource_v2
