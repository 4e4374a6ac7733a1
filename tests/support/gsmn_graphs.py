"""Graph files for the sparse GSMN on test captions: a chain of dependency edges per caption."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from vse_ray.data.store.readers import load_captions


def chain_graphs(texts: Iterable[str], path: Path) -> Path:
    """Write {text: edges} giving each caption ``<start> w1 .. wn <end>`` the chain w1 - w2 - ... - wn, the
    root's pair first (as CoreNLP lists it); return `path`."""
    graphs = {t: [[0, 1], *([k, k + 1] for k in range(1, len(t.split())))] for t in texts}
    path.write_text(json.dumps(graphs))
    return path


def store_graphs(data_dir: Path, path: Path) -> Path:
    """`chain_graphs` of every caption of a precompute folder's splits."""
    texts = [
        str(t) for split in ("train", "val", "test") for t in load_captions(str(data_dir), split)["text"]
    ]
    return chain_graphs(texts, path)
