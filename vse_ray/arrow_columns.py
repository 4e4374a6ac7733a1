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
