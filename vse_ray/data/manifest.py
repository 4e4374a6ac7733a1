"""``manifest.json`` and the config guard that keeps one output folder to one config."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq

import vse_ray
from vse_ray.data.config import PrecomputeConfig
from vse_ray.data.schema import SCHEMA_VERSION
from vse_ray.data.shards import ShardLedger, part_name, write_json_atomic
from vse_ray.data.verify import parquet_files

STATE_CONFIG = Path("_state") / "config.json"


def claim_output(out: Path, config: PrecomputeConfig, overwrite: bool) -> None:
    """Make ``out`` hold this config's precompute: resume it, start it, or refuse to mix configs.

    Raises:
        ValueError: If ``out`` was written with another config and not ``overwrite``, or if it is a non-empty
            folder that vse_ray did not write (no manifest or state): ``overwrite`` never deletes those.
    """
    state = out / STATE_CONFIG
    if out.exists() and any(out.iterdir()):
        previous = json.loads(state.read_text()).get("config_hash") if state.is_file() else None
        if previous != config.hash():
            if previous is None and not (out / "manifest.json").is_file():
                raise ValueError(
                    f"out folder {out} is not empty and holds no vse_ray precompute (no manifest.json or "
                    f"{STATE_CONFIG}); choose another --out (--overwrite deletes only vse_ray folders)"
                )
            if not overwrite:
                raise ValueError(
                    f"out folder {out} was written with another config (hash {(previous or '?')[:12]}); the "
                    f"current config has hash {config.hash()[:12]}. Pass --overwrite to delete it and start "
                    "again, or choose another --out."
                )
            shutil.rmtree(out)
    write_json_atomic({"config_hash": config.hash(), "config": config.resolved().to_dict()}, state)


def table_counts(out: Path, table: str, splits: tuple[str, ...]) -> tuple[dict, dict, list]:
    """Row counts per split, ``{file: {rows, sha256}}`` and rejects, read from the shard markers."""
    ledger = ShardLedger(out, table)
    counts, files, rejects = {}, {}, []
    for split in splits:
        markers = ledger.markers(split)
        counts[split] = sum(m["rows"] for m in markers)
        for marker in markers:
            files.update(marker["files"])
            rejects += [{**r, "split": split} for r in marker["rejects"]]
    return counts, files, rejects


def write_manifest(out: Path, config: PrecomputeConfig, extra: dict) -> dict:
    """Write ``manifest.json`` from the shard markers, the relevance files and ``extra`` (dims, timings)."""
    splits = config.splits
    images, feature_files, rejects = table_counts(out, "features", splits)
    captions, caption_files, _ = table_counts(out, "captions", splits)
    relevance_files = parquet_files(out, ("relevance",))
    relevance: dict[str, dict] = {}
    for name, info in relevance_files.items():
        _, split, source, part = name.split("/")
        entry = relevance.setdefault(f"{split}/{source}", {"folder": str(Path(name).parent), "rows": 0})
        entry["rows"] += info["rows"]
        if part == part_name(0):
            entry["captions"] = pq.read_schema(out / name).field("relevance").type.list_size
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "vse_ray_version": vse_ray.__version__,
        "config": config.resolved().to_dict(),
        "config_hash": config.hash(),
        "rows": {"images": images, "captions": captions, "rejects": len(rejects)},
        "shards": {**feature_files, **caption_files, **relevance_files},
        "relevance": relevance,
        "rejects": rejects,
        **extra,
    }
    write_json_atomic(manifest, out / "manifest.json")
    return manifest
