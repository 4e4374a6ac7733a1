"""Deterministic shards keyed by row ranges, atomic Parquet / Arrow IPC writes and completion markers.

A table (``features`` or ``captions``) of a split is cut into shards of ``shard_size`` consecutive rows.
Each shard is written as one or more ``part-<first row>.parquet`` (or ``.arrow``) files, renamed into
place only when complete. Once all its rows are accounted for, a marker
``_state/<table>/<split>-<start>.json`` holds its files, row counts, checksums, rejects and the Ray nodes
that read, computed and wrote it. A rerun skips shards with a marker and deletes the files of shards
without one before redoing them, so an interrupted run completes without duplicate or missing rows.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from vse_ray.json_files import atomic_path, write_json_atomic

PART_ROW = re.compile(r"^\.?part-(\d+)\.")  # the first row of a part file or its hidden temporary
NODE_PREFIX = "_node_"  # batch columns naming the Ray node a stage ran on; recorded in markers, never written


@dataclass(frozen=True)
class Shard:
    """Rows ``start:stop`` of one split of a table."""

    split: str
    start: int
    stop: int

    @property
    def key(self) -> str:
        return f"{self.split}-{self.start:08d}"

    @property
    def size(self) -> int:
        return self.stop - self.start


def plan_shards(split: str, n_rows: int, shard_size: int) -> list[Shard]:
    """Cut ``n_rows`` rows of ``split`` into consecutive shards of ``shard_size`` rows (last one shorter)."""
    if shard_size < 1:
        raise ValueError(f"shard_size must be >= 1, got {shard_size}")
    return [Shard(split, start, min(start + shard_size, n_rows)) for start in range(0, n_rows, shard_size)]


def part_name(first_row: int, file_format: str = "parquet") -> str:
    return f"part-{first_row:08d}.{file_format}"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_atomic(table: pa.Table, path: Path) -> str:
    """Write ``table`` to ``path`` through a hidden temporary file and a rename; returns the file's sha256.

    ``.arrow`` paths get an uncompressed Arrow IPC file of one record batch (rows at fixed offsets), other
    paths Parquet.
    """
    with atomic_path(path) as tmp:
        if path.suffix == ".arrow":
            with pa.ipc.new_file(tmp, table.schema) as writer:
                writer.write_table(table.combine_chunks(), max_chunksize=max(table.num_rows, 1))
        else:
            pq.write_table(table, tmp)
        digest = sha256_file(tmp)
    return digest


class ShardLedger:
    """Completion markers of one table under ``<out>/_state/<table>/``."""

    def __init__(self, out: Path, table: str):
        self.table_dir = out / table
        self.state_dir = out / "_state" / table

    def marker(self, shard: Shard) -> Path:
        return self.state_dir / f"{shard.key}.json"

    def is_complete(self, shard: Shard) -> bool:
        return self.marker(shard).exists()

    def pending(self, shards: list[Shard]) -> list[Shard]:
        """Shards without a marker; their leftover files from an interrupted run are deleted."""
        todo = [shard for shard in shards if not self.is_complete(shard)]
        for shard in todo:
            folder = self.table_dir / f"split={shard.split}"
            for path in folder.glob("*part-*.*") if folder.exists() else ():
                first = PART_ROW.match(path.name)  # a part file, or the hidden temporary of a killed write
                if first and shard.start <= int(first[1]) < shard.stop:
                    path.unlink()
        return todo

    def complete(self, shard: Shard, pieces: list[dict]) -> None:
        """Write the marker of ``shard`` from the summaries of its written pieces."""
        write_json_atomic(
            {
                "split": shard.split,
                "start": shard.start,
                "stop": shard.stop,
                "rows": sum(int(p["rows"]) for p in pieces),
                "files": {
                    str(p["file"]): {"rows": int(p["rows"]), "sha256": str(p["sha256"])}
                    for p in pieces
                    if p["file"]
                },
                "rejects": [r for p in pieces for r in json.loads(str(p["rejects"]))],
                "nodes": merge_nodes(json.loads(str(p.get("nodes", "{}"))) for p in pieces),
            },
            self.marker(shard),
        )

    def markers(self, split: str) -> list[dict]:
        """All markers of ``split`` in row order."""
        return [json.loads(path.read_text()) for path in sorted(self.state_dir.glob(f"{split}-*.json"))]


def write_pieces(
    batch: dict[str, np.ndarray],
    *,
    table_dir: str,
    to_table: Callable[[dict[str, np.ndarray]], pa.Table],
    file_format: str = "parquet",
) -> dict[str, np.ndarray]:
    """Ray Data stage: write a batch as one file per shard it touches; one summary row per file.

    The batch needs ``split``, ``row`` (row index within the split) and ``shard_start`` columns; rows with
    a non-empty ``reject`` reason are left out of the file and listed in the summary instead.

    Args:
        batch: Numpy batch of the rows to write.
        table_dir: The table folder (``<out>/features`` or ``<out>/captions``).
        to_table: Module-level function turning the kept rows into the table's Arrow schema.
        file_format: "parquet", or "arrow" (Arrow IPC) for tables read by row (region features).

    Returns:
        Columns ``split``, ``shard_start``, ``n_in`` (rows seen), ``rows`` (rows written), ``file``,
        ``sha256``,
        ``rejects`` (JSON list of ``{"image_id", "path", "reason"}``), ``nodes`` (JSON ``{stage: [node
        ids]}``: this writer's node and those of the ``_node_<stage>`` columns, which are not written).
    """
    summary: dict[str, list] = {
        k: [] for k in ("split", "shard_start", "n_in", "rows", "file", "sha256", "rejects", "nodes")
    }
    tags = {name: batch.pop(name) for name in [n for n in batch if n.startswith(NODE_PREFIX)]}
    write_node = current_node()
    keys = np.array(
        [f"{split}/{start}" for split, start in zip(batch["split"], batch["shard_start"], strict=True)]
    )
    for key in dict.fromkeys(keys.tolist()):
        rows = np.flatnonzero(keys == key)
        reasons = np.asarray(batch.get("reject", np.full(len(keys), "")), dtype=str)[rows]
        kept = rows[reasons == ""]
        split = str(batch["split"][rows[0]])
        rejects = [
            {
                "image_id": int(batch["image_id"][i]),
                "path": str(batch["ref"][i]),
                "reason": str(batch["reject"][i]),
            }
            for i in rows[reasons != ""]
        ]
        file, digest = "", ""
        if len(kept):
            path = Path(table_dir) / f"split={split}" / part_name(int(batch["row"][kept].min()), file_format)
            digest = write_atomic(to_table({name: col[kept] for name, col in batch.items()}), path)
            file = f"{Path(table_dir).name}/split={split}/{path.name}"
        for name, value in zip(
            summary,
            (
                split,
                int(batch["shard_start"][rows[0]]),
                len(rows),
                len(kept),
                file,
                digest,
                json.dumps(rejects),
                json.dumps(
                    {"write": [write_node]}
                    | {
                        n.removeprefix(NODE_PREFIX): sorted(set(col[rows].tolist()))
                        for n, col in tags.items()
                    }
                ),
            ),
            strict=True,
        ):
            summary[name].append(value)
    return {name: np.asarray(values) for name, values in summary.items()}


def current_node() -> str:
    """Id of the Ray node this process runs on ("" outside Ray)."""
    import ray  # here, so that reading a store needs no Ray (the GPU benchmarks run without it)

    return ray.get_runtime_context().get_node_id() if ray.is_initialized() else ""


def merge_nodes(parts: Iterable[dict[str, list[str]]]) -> dict[str, list[str]]:
    """Union of ``{stage: [node ids]}`` maps, sorted."""
    merged: dict[str, set[str]] = {}
    for part in parts:
        for stage, nodes in part.items():
            merged.setdefault(stage, set()).update(nodes)
    return {stage: sorted(nodes) for stage, nodes in sorted(merged.items())}


def shard_input(shard: Shard, columns: dict[str, np.ndarray]) -> pa.Table:
    """Input block of ``shard``: rows ``start:stop`` of ``columns`` + ``split``, ``row``, ``shard_start``."""
    rows = slice(shard.start, shard.stop)
    data = {name: pa.array(np.asarray(col[rows]).tolist()) for name, col in columns.items()}
    data["split"] = pa.array([shard.split] * shard.size)
    data["row"] = pa.array(np.arange(shard.start, shard.stop, dtype=np.int64))
    data["shard_start"] = pa.array(np.full(shard.size, shard.start, dtype=np.int64))
    return pa.table(data)


def record_pieces(summaries: Iterable[dict], ledger: ShardLedger, shards: list[Shard]) -> None:
    """Consume :func:`write_pieces` summaries as they stream in; mark each shard once all its rows are seen.

    Raises:
        RuntimeError: If the stream ends with a shard short of rows (nothing is marked for it).
    """
    by_key = {(s.split, s.start): s for s in shards}
    pieces: dict[tuple[str, int], list[dict]] = {key: [] for key in by_key}
    for piece in summaries:
        key = (str(piece["split"]), int(piece["shard_start"]))
        pieces[key].append(piece)
        if sum(int(p["n_in"]) for p in pieces[key]) == by_key[key].size:
            ledger.complete(by_key[key], pieces[key])
    short = [by_key[key].key for key in by_key if not ledger.is_complete(by_key[key])]
    if short:
        raise RuntimeError(f"{ledger.table_dir.name}: shards {short} did not receive all their rows")
