"""`parity/replay_lineage.py`: vse_ray is fed the official run's batches, in order, with or without each
epoch's last, smaller batch."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np

PARITY = Path(__file__).resolve().parents[2] / "parity"


def test_official_batches_deal_the_recorded_rows_and_drop_only_the_short_one() -> None:
    sys.path.insert(0, str(PARITY))
    try:
        replay = importlib.import_module("replay_lineage")
    finally:
        sys.path.remove(str(PARITY))
    columns = {"caption_id": np.arange(10) + 100, "image_id": np.arange(10) // 5}
    ids = [[np.array([3, 1, 4]), np.array([0, 9, 2]), np.array([7])], [np.array([5, 6, 8])]]
    kept = list(replay.OfficialBatches(columns, ids, drop=False).epoch_batches(1))
    assert [b["caption_id"].tolist() for b in kept] == [[103, 101, 104], [100, 109, 102], [107]]
    assert [b["image_id"].tolist() for b in kept][1] == [0, 1, 0]
    dropped = list(replay.OfficialBatches(columns, ids, drop=True).epoch_batches(1))
    assert [b["caption_id"].tolist() for b in dropped] == [[103, 101, 104], [100, 109, 102]]
    assert [
        b["caption_id"].tolist() for b in replay.OfficialBatches(columns, ids, True).epoch_batches(2)
    ] == [[105, 106, 108]]
