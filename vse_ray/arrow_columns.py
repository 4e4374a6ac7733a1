"""Numpy arrays ↔ Arrow list columns: the vector and ragged columns of the precompute tables."""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def fixed_size_list(matrix: np.ndarray) -> pa.FixedSizeListArray:
    """(n, D) array → ``fixed_size_list<float32>[D]`` (flattened, no copy when already float32 C-order)."""
    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    if matrix.ndim != 2:
        raise ValueError(f"expected a (n, D) matrix, got shape {matrix.shape}")
    return pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), matrix.shape[1])


def vectors(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """``fixed_size_list<float32>[D]`` column → (n, D) float32 array."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    width = column.type.list_size
    return column.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False).reshape(-1, width)


def list_column(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """``list<T>`` or ``fixed_size_list<T>[k]`` column → (n + 1,) int64 row offsets and the values."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    values = column.flatten().to_numpy(zero_copy_only=False)
    if pa.types.is_fixed_size_list(column.type):
        return np.arange(len(column) + 1, dtype=np.int64) * column.type.list_size, values
    offsets = column.offsets.to_numpy().astype(np.int64)
    return offsets - offsets[0], values


class ColumnRows:
    """Rows of an Arrow column by index, read out of its chunks: nothing is copied until a row is asked for,
    so a memory-mapped column stays in the file.

    ``rows[index]`` gives what ``column.to_numpy(zero_copy_only=False)[index]`` gives for a one-chunk
    column, except that a fixed-size list column gives a (k, D) array: a numeric column a numeric array;
    a list column an object array of 1-D arrays; any other column an object array of Python values.
    """

    def __init__(self, column: pa.ChunkedArray):
        chunks = column.chunks or [pa.array([], type=column.type)]
        self.starts = np.cumsum([0, *(len(chunk) for chunk in chunks)])
        self.kind = column.type
        self.chunks: list = [self._view(chunk) for chunk in chunks]

    def _view(self, chunk: pa.Array) -> object:
        if pa.types.is_fixed_size_list(self.kind):
            values = chunk.flatten().to_numpy(zero_copy_only=False)
            return values.reshape(len(chunk), self.kind.list_size)
        if pa.types.is_list(self.kind):  # offsets index `values`, which ignores the chunk's slice offset
            return chunk.offsets.to_numpy(), chunk.values.to_numpy(zero_copy_only=False)
        if pa.types.is_integer(self.kind) or pa.types.is_floating(self.kind):
            return chunk.to_numpy()
        return chunk

    @staticmethod
    def _row(chunk: object, k: int) -> object:
        """Row `k` of a chunk held as a list column's (offsets, values), or as Arrow values."""
        if isinstance(chunk, tuple):
            offsets, values = chunk
            return values[offsets[k] : offsets[k + 1]]
        return chunk[k].as_py()  # type: ignore[index]

    def __len__(self) -> int:
        return int(self.starts[-1])

    def __getitem__(self, index: np.ndarray) -> np.ndarray:
        index = np.asarray(index, dtype=np.int64)
        which = np.searchsorted(self.starts, index, side="right") - 1
        local = index - self.starts[which]
        if not isinstance(self.chunks[0], np.ndarray):  # one object a row
            out = np.empty(len(index), dtype=object)
            for row, (c, k) in enumerate(zip(which.tolist(), local.tolist(), strict=True)):
                out[row] = self._row(self.chunks[c], k)
            return out
        first = self.chunks[0]
        out = np.empty((len(index), *first.shape[1:]), dtype=first.dtype)
        for c in np.unique(which).tolist():
            mask = which == c
            out[mask] = self.chunks[c][local[mask]]
        return out
