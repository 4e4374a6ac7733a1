"""Region features read by row from a split's Arrow IPC shards: a training process holds only its batch.

Each shard is an uncompressed Arrow IPC file of one record batch (:mod:`vse_ray.data.store.schema`), so the
R × D values of row k start at a fixed byte offset. Opening a shard memory-maps it once to find that offset
and the image ids; rows are then read with positional reads (``os.preadv``) into the batch's own array.
Unlike touching a memory map, this leaves no file pages in the process's resident set, so a worker's
memory stays flat whatever the size of the split.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa


def _shard_layout(path: Path) -> tuple[np.ndarray, int, tuple[int, int], np.dtype]:
    """(image ids, byte offset of row 0's features, (R, D), stored dtype) of one IPC shard."""
    with pa.memory_map(str(path)) as source:
        base = source.read_buffer(1)
        source.seek(0)
        reader = pa.ipc.open_file(source)
        if reader.num_record_batches != 1:
            raise ValueError(f"{path}: {reader.num_record_batches} record batches; expected 1 per shard")
        batch = reader.get_batch(0)
        kind = batch.schema.field("feature").type
        if not pa.types.is_fixed_size_list(kind.value_type):
            raise ValueError(f"{path}: feature column {kind} has no region axis")
        values = batch.column("feature").flatten().flatten()
        dtype = np.dtype(values.type.to_pandas_dtype())
        offset = values.buffers()[1].address - base.address + values.offset * dtype.itemsize
        ids = batch.column("image_id").to_numpy().astype(np.int64)
    return ids, offset, (kind.list_size, kind.value_type.list_size), dtype


class RegionRows:
    """The (n, R, D) region features of one split, indexed like an array but read from disk on access.

    ``rows[index]`` (an int array or a slice over the stored order, shards in file-name order) returns a
    float32 array; ``image_ids`` gives the id of each stored row.

    Args:
        folder: ``<data>/features/split=<split>`` holding ``part-*.arrow`` shards.
    """

    def __init__(self, folder: str | Path):
        self.paths = sorted(Path(folder).glob("part-*.arrow"))
        if not self.paths:
            raise ValueError(f"{folder}: no region feature shards (part-*.arrow)")
        layouts = [_shard_layout(p) for p in self.paths]
        shapes = {(layout[2], layout[3]) for layout in layouts}
        if len(shapes) > 1:
            raise ValueError(f"{folder}: shards disagree on (R, D) and dtype: {sorted(map(str, shapes))}")
        ((self.region_shape, self.dtype),) = shapes
        self.image_ids = np.concatenate([layout[0] for layout in layouts])
        self._offsets = np.array([layout[1] for layout in layouts], dtype=np.int64)
        self._starts = np.cumsum([0] + [len(layout[0]) for layout in layouts])
        self._row_bytes = int(np.prod(self.region_shape)) * self.dtype.itemsize
        self._fds: list[int] | None = None

    @property
    def shape(self) -> tuple[int, int, int]:
        return (len(self.image_ids), *self.region_shape)

    @property
    def ndim(self) -> int:
        return 3

    def __len__(self) -> int:
        return len(self.image_ids)

    def __getitem__(self, index: np.ndarray | slice) -> np.ndarray:
        return self.stored(index).astype(np.float32, copy=False)

    def stored(self, index: np.ndarray | slice) -> np.ndarray:
        """The rows as stored (float16 or float32): a training batch widens them on its device."""
        rows = np.arange(len(self))[index] if isinstance(index, slice) else np.asarray(index, dtype=np.int64)
        if rows.size and (rows.min() < 0 or rows.max() >= len(self)):
            raise IndexError(f"rows out of range 0..{len(self) - 1}")
        if self._fds is None:  # opened on first read, so the object pickles before use
            self._fds = [os.open(p, os.O_RDONLY) for p in self.paths]
        out = np.empty((len(rows), *self.region_shape), dtype=self.dtype)
        shard = np.searchsorted(self._starts, rows, side="right") - 1
        positions = self._offsets[shard] + (rows - self._starts[shard]) * self._row_bytes
        for k, (s, pos) in enumerate(zip(shard.tolist(), positions.tolist(), strict=True)):
            if os.preadv(self._fds[s], [memoryview(out[k]).cast("B")], pos) != self._row_bytes:
                raise ValueError(f"{self.paths[s]}: truncated at byte {pos}")
        return out

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_fds": None}

    def __del__(self) -> None:
        for fd in self._fds or ():
            os.close(fd)
