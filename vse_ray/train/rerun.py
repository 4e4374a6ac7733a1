"""What a rerun of ``vse-ray train`` does: resume the same run, refuse a changed config, or start a new run.

Each run keeps the config it was started with in ``<storage_path>/<run_name>/vse_ray_config.json``, beside
its Ray Train checkpoints. A rerun with the same config resumes. A rerun with another config is refused with
the keys that differ, unless ``resume`` (only :data:`SAFE_ON_RESUME` keys may differ; the change is recorded
in the file and on the MLflow run) or ``new_run`` (a fresh run ``<run_name>-2``, ``-3``, ... beside it).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mlflow import MlflowClient

from vse_ray.data.store.shards import write_json_atomic
from vse_ray.data.store.verify import VerifiedData
from vse_ray.losses import LOSS_NAMES, loss_hparams
from vse_ray.models import MODEL_NAMES, model_options
from vse_ray.tracking.filters import tag_equals
from vse_ray.tracking.lock import FolderLock
from vse_ray.tracking.runs import RUN_NAME_TAG
from vse_ray.train.config import TrainConfig

RECORD = "vse_ray_config.json"
# Keys that change how long or where a run trains, not what it computes up to the epochs it has done.
SAFE_ON_RESUME = ("epochs", "max_failures", "cpus_per_worker", "placement_strategy", "eval_batch_size")
CHANGES_TAG = "vse_ray.resume_changes"
# Dict fields of hyper-parameters and the field naming the loss or model whose defaults fill them in.
CONFIGURED_BY = {"loss_params": "loss", "warmup_params": "warmup_loss", "model_params": "model"}


def record_path(cfg: TrainConfig) -> Path:
    """Where a resolved config's run keeps the config it was started with."""
    return Path(cfg.storage_path) / cfg.run_name / RECORD


def effective_config(config: dict[str, Any]) -> dict[str, Any]:
    """A config (``TrainConfig.to_dict()``) as JSON values, with the defaults of its loss, warm-up loss and
    model filled into ``loss_params``, ``warmup_params`` and ``model_params``: restating a default changes
    nothing the run computes."""
    filled = dict(config)
    for params, name in CONFIGURED_BY.items():
        if isinstance(filled.get(params), dict):
            filled[params] = {**_defaults(params, filled.get(name)), **filled[params]}
    return json.loads(json.dumps(filled, default=repr))


def _defaults(params: str, name: Any) -> dict[str, Any]:
    """The defaults of the loss or model ``name`` that the field ``params`` configures ({} for an unknown
    name: the config check names it)."""
    if params == "model_params":
        found = model_options(name) if name in MODEL_NAMES else {}
    else:
        found = loss_hparams(name) if name in LOSS_NAMES else {}
    return {key: value for key, value in found.items() if value is not inspect.Parameter.empty}


def config_changes(old: dict[str, Any], new: dict[str, Any]) -> dict[str, list[Any]]:
    """``{key: [old, new]}`` of the keys both configs have whose effective values differ (see
    :func:`effective_config`); a key only one has (a field added or removed by another vse_ray version)
    is no change."""
    old, new = effective_config(old), effective_config(new)
    return {k: [old[k], new[k]] for k in sorted(set(old) & set(new)) if old[k] != new[k]}


def describe(changes: dict[str, list[Any]]) -> str:
    """``lr 0.0002 -> 0.002, epochs 30 -> 40``."""
    return ", ".join(f"{key} {old!r} -> {new!r}" for key, (old, new) in changes.items())


def _new_run_name(cfg: TrainConfig) -> str:
    k = 2
    while (Path(cfg.storage_path) / f"{cfg.run_name}-{k}").exists():
        k += 1
    return f"{cfg.run_name}-{k}"


def _tag_changes(cfg: TrainConfig, history: list[dict]) -> None:
    """Put the resume changes on the run's MLflow run, when it exists (its params keep the first values)."""
    client = MlflowClient(cfg.tracking_uri)
    experiment = client.get_experiment_by_name(cfg.experiment)
    if experiment is None:
        return
    query = tag_equals(RUN_NAME_TAG, cfg.run_name, "run_name")
    for run in client.search_runs([experiment.experiment_id], query, max_results=1):
        client.set_tag(run.info.run_id, CHANGES_TAG, json.dumps(history)[:5000])


def _data_record(data: VerifiedData | None) -> dict[str, str]:
    """What a run's record keeps of its data folder: the manifest's sha256 and the data's."""
    return (
        {}
        if data is None
        else {"manifest_sha256": data.manifest_sha256, "content_sha256": data.content_sha256}
    )


def _data_changed(record: dict, data: VerifiedData | None) -> str | None:
    """Why the data folder no longer holds the data the run trained on (precomputed again), or None."""
    old = record.get("data") or {}
    if data is None or not old.get("content_sha256") or old["content_sha256"] == data.content_sha256:
        return None
    return (
        f"was trained on {data.path} with manifest sha256 {old['manifest_sha256']}; that folder now holds "
        f"other data (manifest sha256 {data.manifest_sha256}: precomputed again?)"
    )


def plan_run(
    cfg: TrainConfig,
    resume: bool = False,
    new_run: bool = False,
    notify: Callable[[str], None] = print,
    data: VerifiedData | None = None,
) -> TrainConfig:
    """The resolved config to train: this run resumed, or a new run beside it (see module doc).

    ``data``, the verified data folder, is recorded with the run; a rerun on a folder that holds other data
    than the run trained on (the same path precomputed again) resumes nothing.

    Raises:
        ValueError: Listing the keys that differ from the run's config, when neither ``resume`` (with only
            safe keys changed) nor ``new_run`` is given; naming both manifest hashes when the data folder
            holds other data, unless ``new_run``.
    """
    if resume and new_run:
        raise ValueError("--resume and --new-run exclude each other: continue the run or start a new one")
    cfg = cfg.resolved()
    path = record_path(cfg)
    if not path.is_file():
        write_json_atomic({"config": cfg.to_dict(), "changes": [], "data": _data_record(data)}, path)
        return cfg
    record = json.loads(path.read_text())
    changes = config_changes(record["config"], cfg.to_dict())
    other_data = _data_changed(record, data)
    if not changes and other_data is None:
        if data is not None and not record.get("data"):  # a run recorded before its data was
            write_json_atomic({**record, "data": _data_record(data)}, path)
        return cfg
    where = f"run {cfg.run_name!r} in {cfg.storage_path}"
    if new_run:
        fresh = dataclasses.replace(cfg, run_name=_new_run_name(cfg))
        fresh_record = {"config": fresh.to_dict(), "changes": [], "data": _data_record(data)}
        write_json_atomic(fresh_record, record_path(fresh))
        reason = f", which {other_data}" if other_data else f" ({describe(changes)})"
        notify(f"new run {fresh.run_name} beside {cfg.run_name}{reason}")
        return fresh
    if other_data is not None:
        raise ValueError(
            f"{where} {other_data}; its checkpoints do not fit that data: pass --new-run to start a fresh "
            "run beside it, or choose another --run-name"
        )
    unsafe = [key for key in changes if key not in SAFE_ON_RESUME]
    if resume and unsafe:
        raise ValueError(
            f"--resume: {where} cannot continue with another {', '.join(unsafe)} "
            f"({describe({k: changes[k] for k in unsafe})}); only {', '.join(SAFE_ON_RESUME)} may change. "
            "Use --new-run to start a fresh run beside it"
        )
    if not resume:
        raise ValueError(
            f"{where} was started with another config ({describe(changes)}): pass --resume to continue it "
            f"(only {', '.join(SAFE_ON_RESUME)} may change), --new-run to start a fresh run beside it, or "
            "choose another --run-name"
        )
    history = [*record["changes"], {"time": time.time(), "changes": changes}]
    write_json_atomic({**record, "config": cfg.to_dict(), "changes": history}, path)
    _tag_changes(cfg, history)
    notify(f"resuming {cfg.run_name} with {describe(changes)}")
    return cfg


def _run_lock(cfg: TrainConfig) -> FolderLock:
    folder = Path(cfg.storage_path) / cfg.run_name
    return FolderLock(folder, f"run {cfg.run_name!r} ({folder})", "choose another --run-name")


def _create_store(cfg: TrainConfig, notify: Callable[[str], None]) -> None:
    """Create a local sqlite MLflow store under the output folder's lock: two first runs in one folder
    would otherwise race in MLflow's schema migration."""
    if not cfg.tracking_uri.startswith("sqlite:///"):
        return
    lock = FolderLock(cfg.output_dir, f"output folder {cfg.output_dir}").acquire(wait=True, notify=notify)
    try:
        MlflowClient(cfg.tracking_uri).search_experiments(max_results=1)
    finally:
        lock.release()


def claim_run(
    cfg: TrainConfig,
    resume: bool = False,
    new_run: bool = False,
    wait: bool = False,
    notify: Callable[[str], None] = print,
    data: VerifiedData | None = None,
) -> TrainConfig:
    """Lock the run (one writer; ``wait`` queues behind the holder), then :func:`plan_run`; a new run beside
    it is locked too.

    The locks are held until :func:`~vse_ray.tracking.lock.release_all` (the end of the command) or the end
    of the process.
    """
    cfg = cfg.resolved()
    locks = [_run_lock(cfg).acquire(wait=wait, notify=notify)]
    try:
        _create_store(cfg, notify)
        planned = plan_run(cfg, resume, new_run, notify, data)
        if planned.run_name != cfg.run_name:
            locks.append(_run_lock(planned).acquire(wait=wait, notify=notify))
        return planned
    except BaseException:
        for lock in locks:
            lock.release()
        raise
