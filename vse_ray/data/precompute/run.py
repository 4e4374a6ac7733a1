"""Stage 1 of the data flow: raw data → features, captions and relevance files (``vse-ray precompute``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from vse_ray.data.precompute.caption_stage import caption_columns, run_caption_stage
from vse_ray.data.precompute.concepts import write_concepts
from vse_ray.data.precompute.config import ExecutionOptions, PrecomputeConfig
from vse_ray.data.precompute.image_stage import run_image_stage
from vse_ray.data.precompute.manifest import check_output, claim_output, table_counts, write_manifest
from vse_ray.data.precompute.official_vocab import ReleasedTokenizer, ladder_tokens_file
from vse_ray.data.precompute.relevance_stage import run_relevance_stage
from vse_ray.data.precompute.summary import PrecomputeSummary
from vse_ray.data.sources.image_io import FileImages, SyntheticImages
from vse_ray.data.sources.karpathy import read_karpathy
from vse_ray.data.sources.precomp import read_precomp
from vse_ray.data.sources.source import Source, SplitSource, select_splits
from vse_ray.data.store.readers import load_vocab, table_schema
from vse_ray.data.store.shards import sha256_file
from vse_ray.data.synthetic.dataset import generate_synthetic
from vse_ray.data.synthetic.scene import scene_descriptor
from vse_ray.features import check_weights
from vse_ray.file_lock import FolderLock
from vse_ray.ray_session import ensure_ray
from vse_ray.relevance.sources import SOURCES


def _given(value: str | None, name: str, dataset: str) -> str:
    """The input `name` of a resolved config (which required it); ValueError naming it otherwise."""
    if not value:
        raise ValueError(f"{name}: dataset {dataset!r} needs it")
    return value


def load_source(config: PrecomputeConfig) -> Source:
    """Read and validate the input described by a resolved config (no Ray needed)."""
    if config.dataset == "karpathy":
        karpathy_json = _given(config.karpathy_json, "karpathy_json", config.dataset)
        splits = read_karpathy(karpathy_json, config.splits, config.captions_per_image, config.restval)
        return Source(
            splits=splits, images=FileImages(_given(config.image_root, "image_root", config.dataset))
        )
    if config.dataset == "precomp":
        splits, features = read_precomp(
            _given(config.precomp_dir, "precomp_dir", config.dataset),
            config.splits,
            config.captions_per_image,
            config.feature_dtype,
            config.precomp_test,
        )
        return Source(splits=splits, features=features)
    data = generate_synthetic(
        config.n_train,
        config.n_val,
        config.n_test,
        config.image_size,
        config.seed,
        config.captions_per_image,
        render=False,
    )
    per_image = config.captions_per_image
    descriptors = np.stack([scene_descriptor(scene) for scene in data.scenes])
    available = {}
    for split in dict.fromkeys(data.splits):
        ids = data.image_ids[np.asarray(data.splits) == split]
        available[split] = SplitSource(
            image_ids=ids,
            refs=ids.astype(str).astype(object),
            captions=tuple(data.captions[k] for k in ids),
            caption_ids=ids[:, None] * per_image + np.arange(per_image),
            scenes=descriptors[ids],
        )
    splits = select_splits(available, config.splits, "the synthetic dataset (a split of size 0?)")
    return Source(splits=splits, images=SyntheticImages(config.seed, config.image_size))


def check_rejects(rejects: list[dict], source: Source, max_fraction: float) -> None:
    """ValueError when a split rejected more than ``max_fraction`` of its images, listing a few of them."""
    for split, data in source.splits.items():
        bad = [r for r in rejects if r["split"] == split]
        if len(bad) > max_fraction * len(data.image_ids):
            examples = "; ".join(f"{r['path']}: {r['reason']}" for r in bad[:3])
            raise ValueError(
                f"{len(bad)} of {len(data.image_ids)} {split} images were rejected, more than "
                f"max_reject_fraction={max_fraction}; e.g. {examples}; fix or remove those images, or raise "
                "--max-reject-fraction, and rerun: finished shards are kept"
            )


def write_rejects(out: Path, rejects: list[dict]) -> None:
    columns = {k: [r[k] for r in rejects] for k in ("image_id", "split", "path", "reason")}
    schema = pa.schema(
        [("image_id", pa.int64()), ("split", pa.string()), ("path", pa.string()), ("reason", pa.string())]
    )
    pq.write_table(pa.table(columns, schema=schema), out / "rejects.parquet")


def _vector_width(out: Path, table: str, column: str) -> int:
    """Width of a vector column, read from the schema of the train shards."""
    return int(table_schema(str(out), table, "train").field(column).type.list_size)


def feature_dims(out: Path) -> dict:
    """``feature`` (D), ``regions`` (R, or None for pooled features), ``feature_dtype`` and
    ``feature_shape`` ([R, D] or [D]), read from the schema of one train features shard."""
    path = min((out / "features" / "split=train").glob("part-*.*"))
    if path.suffix == ".arrow":
        with pa.memory_map(str(path)) as source:
            kind = pa.ipc.open_file(source).schema.field("feature").type
    else:
        kind = pq.read_schema(path).field("feature").type
    if pa.types.is_fixed_size_list(kind.value_type):
        regions, dim = kind.list_size, kind.value_type.list_size
        dtype = str(kind.value_type.value_type.to_pandas_dtype().__name__)
        return {"feature": dim, "regions": regions, "feature_dtype": dtype, "feature_shape": [regions, dim]}
    return {
        "feature": kind.list_size,
        "regions": None,
        "feature_dtype": "float32",
        "feature_shape": [kind.list_size],
    }


def _output_folder(out: str) -> Path:
    """``out`` with its links followed, as ``train --output-dir`` is: a link names its target folder, which
    a dangling one creates; ValueError for a link loop or a path that is not a folder."""
    try:
        folder = Path(out).expanduser().resolve()
    except RuntimeError as err:  # a loop of links
        raise ValueError(f"--out {out}: {err}") from err
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"--out {out}: {folder} is not a folder")
    return folder


@dataclass(frozen=True)
class ClaimedPrecompute:
    """A precompute whose input is read and checked and whose output folder is claimed: Ray not started."""

    config: PrecomputeConfig
    folder: Path
    source: Source
    options: ExecutionOptions


def claim_precompute(
    config: PrecomputeConfig, out: str, options: ExecutionOptions | None = None, lock: bool = False
) -> ClaimedPrecompute:
    """Check the output folder, read and check the input, then claim ``out`` for this config.

    Shards already complete for the same config are kept; a folder written with another config is refused
    unless ``options.overwrite``, which deletes it here. With ``lock`` (a command), the folder is locked
    first, until the command ends: a train reading it (which shares the lock) or another precompute
    writing it refuses this one, and a train started meanwhile is refused.
    """
    options = options or ExecutionOptions()
    config = config.resolved()
    folder = _output_folder(out)
    check_output(folder, config, options.overwrite)  # before the input is read: a refusal comes at once
    source = load_source(config)
    if config.vocab_file:  # every caption tokenises as the released code does, else one line
        ReleasedTokenizer(ladder_tokens_file(config.vocab_file)).check(
            t for split in source.splits.values() for caps in split.captions for t in caps
        )
    if config.dataset != "precomp":
        check_weights(config.cnn, config.weights)  # the CNN weights are local (no download), else one line
    if lock:
        try:
            FolderLock(folder, f"data folder {folder}").acquire()
        except ValueError:
            raise ValueError(
                f"out folder {folder} is in use by another command (a train reading it, or a precompute "
                "writing it): wait for it to finish, or choose another --out"
            ) from None
    claim_output(folder, config, options.overwrite)
    return ClaimedPrecompute(config, folder, source, options)


def precompute(
    config: PrecomputeConfig,
    out: str,
    options: ExecutionOptions | None = None,
    verbose: bool = True,
    ray_address: str | None = None,
) -> PrecomputeSummary:
    """Run (or resume) the whole precompute of one dataset into ``out``: :func:`claim_precompute`, then
    :func:`run_precompute`.

    Args:
        config: What to compute.
        out: Output folder (local or shared filesystem).
        options: How to run it.
        verbose: Print the summary.
        ray_address: Ray cluster to join when this process has no Ray instance yet (None: see ensure_ray).

    Returns:
        Counts, rejects and timings.
    """
    return run_precompute(claim_precompute(config, out, options), verbose, ray_address)


def run_precompute(
    claimed: ClaimedPrecompute, verbose: bool = True, ray_address: str | None = None
) -> PrecomputeSummary:
    """The Ray stages of a claimed precompute, on this process's Ray instance if there is one, else
    :func:`ensure_ray` (``ray_address``); then its manifest (and the summary printed when ``verbose``)."""
    config, folder, source, options = claimed.config, claimed.folder, claimed.source, claimed.options
    ensure_ray(ray_address)
    started = time.perf_counter()
    seconds, processed = {}, {}

    def timed(stage: str, run: Callable[[], int]) -> None:
        start = time.perf_counter()
        processed[stage] = run()
        seconds[stage] = time.perf_counter() - start

    timed("images", lambda: run_image_stage(source, config, options, folder))
    images_count, _, rejects = table_counts(folder, "features", config.splits)
    check_rejects(rejects, source, options.max_reject_fraction)
    rejected = {(r["split"], r["image_id"]) for r in rejects}
    columns = {
        split: caption_columns(
            data, np.array([i for i in data.image_ids if (split, int(i)) not in rejected], dtype=np.int64)
        )
        for split, data in source.splits.items()
    }
    timed("captions", lambda: run_caption_stage(columns, config, options, folder))
    write_rejects(folder, rejects)

    start = time.perf_counter()
    if "train" in config.splits:
        write_concepts(folder)  # CVSE's concept vocabulary, labels and graph
    seconds["concepts"] = time.perf_counter() - start

    start = time.perf_counter()
    sources = config.relevance_sources
    if isinstance(sources, str):
        raise ValueError(f"relevance_sources: {sources!r}, not resolved to the sources")
    skipped = run_relevance_stage(folder, config.splits, sources, options.relevance_block)
    seconds["relevance"] = time.perf_counter() - start

    dims = {
        name: _vector_width(folder, "captions", str(s.vector_column))
        for name, s in SOURCES.items()
        if s.records_width
    }
    dims.update(feature_dims(folder))
    extra = {"dims": dims, "vocab_size": len(load_vocab(str(folder))), "seconds": seconds, "skipped": skipped}
    if config.vocab_file:
        extra["vocab"] = {"file": config.vocab_file, "sha256": sha256_file(Path(config.vocab_file))}
    manifest = write_manifest(folder, config, extra)
    summary = PrecomputeSummary(
        out=str(folder),
        images=images_count,
        captions=manifest["rows"]["captions"],
        rejects=rejects,
        processed=processed,
        seconds=seconds,
        skipped=skipped,
        wall_seconds=time.perf_counter() - started,
    )
    if verbose:
        print(summary.format())
    return summary
