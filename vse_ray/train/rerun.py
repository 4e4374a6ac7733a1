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

from vse_ray.data.store.verify import VerifiedData
from vse_ray.file_lock import FolderLock
from vse_ray.losses import LOSS_NAMES, loss_hparams
from vse_ray.models import MODEL_NAMES
from vse_ray.tracking import lifecycle
from vse_ray.tracking.filters import tag_equals
from vse_ray.tracking.lifecycle import ConfigRecord, claim_run_folder, describe, prepare_store_beside
from vse_ray.tracking.runs import RUN_NAME_TAG
from vse_ray.train.config import TrainConfig
from vse_ray.train.model_factory import training_options

# Keys that change how long or where a run trains, not what it computes up to the epochs it has done.
SAFE_ON_RESUME = ("epochs", "max_failures", "cpus_per_worker", "placement_strategy", "eval_batch_size")
CHANGES_TAG = "vse_ray.resume_changes"
# Dict fields of hyper-parameters and the field naming the loss or model whose defaults fill them in.
CONFIGURED_BY = {"loss_params": "loss", "warmup_params": "warmup_loss", "model_params": "model"}


def _folder(cfg: TrainConfig) -> Path:
    return Path(cfg.filled("storage_path")) / cfg.filled("run_name")


def record_path(cfg: TrainConfig) -> Path:
    """Where a resolved config's run keeps the config it was started with."""
    return ConfigRecord.of(_folder(cfg)).path


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
        found = training_options(name) if name in MODEL_NAMES else {}
    else:
        found = loss_hparams(name) if name in LOSS_NAMES else {}
    return {key: value for key, value in found.items() if value is not inspect.Parameter.empty}


def config_changes(old: dict[str, Any], new: dict[str, Any]) -> dict[str, list[Any]]:
    """``{key: [old, new]}`` of the keys both configs have whose effective values differ (see
    :func:`effective_config`)."""
    return lifecycle.config_changes(effective_config(old), effective_config(new))


def _new_run_name(cfg: TrainConfig) -> str:
    k = 2
    while (Path(cfg.filled("storage_path")) / f"{cfg.run_name}-{k}").exists():
        k += 1
    return f"{cfg.run_name}-{k}"


def _tag_changes(cfg: TrainConfig, history: list[dict]) -> None:
    """Put the resume changes on the run's MLflow run, when it exists (its params keep the first values)."""
    client = MlflowClient(cfg.tracking_uri)
    experiment = client.get_experiment_by_name(cfg.filled("experiment"))
    if experiment is None:
        return
    query = tag_equals(RUN_NAME_TAG, cfg.filled("run_name"), "run_name")
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
    kept = ConfigRecord.of(_folder(cfg))
    record = kept.load()
    if record is None:
        kept.save(cfg.to_dict(), data=_data_record(data))
        return cfg
    changes = config_changes(record["config"], cfg.to_dict())
    other_data = _data_changed(record, data)
    if not changes and other_data is None:
        if data is not None and not record.get("data"):  # a run recorded before its data was
            kept.save(record["config"], record["changes"], data=_data_record(data))
        return cfg
    where = f"run {cfg.run_name!r} in {cfg.storage_path}"
    if new_run:
        fresh = dataclasses.replace(cfg, run_name=_new_run_name(cfg))
        ConfigRecord.of(_folder(fresh)).save(fresh.to_dict(), data=_data_record(data))
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
        # --resume is offered only where it works: when every key that changed may change on resume
        way = (
            f"pass --resume to continue it (only {', '.join(SAFE_ON_RESUME)} may change), --new-run"
            if not unsafe
            else f"{', '.join(unsafe)} cannot change on resume: pass --new-run"
        )
        raise ValueError(
            f"{where} was started with another config ({describe(changes)}): {way} to start a fresh run "
            "beside it, or choose another --run-name"
        )
    history = [*record["changes"], {"time": time.time(), "changes": changes}]
    kept.save(cfg.to_dict(), history, data=record.get("data") or _data_record(data))
    _tag_changes(cfg, history)
    notify(f"resuming {cfg.run_name} with {describe(changes)}")
    return cfg


def _claim(cfg: TrainConfig, wait: bool, notify: Callable[[str], None]) -> FolderLock:
    folder = _folder(cfg)
    what = f"run {cfg.run_name!r} ({folder})"
    uri = cfg.filled("tracking_uri")
    return claim_run_folder(
        folder, what, "choose another --run-name", uri, wait=wait, notify=notify, store=False
    )


def claim_run(
    cfg: TrainConfig,
    resume: bool = False,
    new_run: bool = False,
    wait: bool = False,
    notify: Callable[[str], None] = print,
    data: VerifiedData | None = None,
    beside: Callable[[], None] = lambda: None,
) -> TrainConfig:
    """Claim the run (:func:`~vse_ray.tracking.lifecycle.claim_run_folder`: the server answers, one writer,
    ``wait`` queues behind the holder), then :func:`plan_run` (a new run beside it is claimed too), then
    the store exists: created while ``beside`` runs (the command's Ray start: after every refusal, beside
    the store's creation, :func:`~vse_ray.tracking.lifecycle.prepare_store_beside`). A start that fails
    there leaves no config recorded for a run it began.

    The locks are held until :func:`~vse_ray.file_lock.release_all` (the end of the command) or the end
    of the process.
    """
    cfg = cfg.resolved()
    locks = [_claim(cfg, wait, notify)]
    fresh = [path for path in (record_path(cfg),) if not path.is_file()]  # records this start writes
    try:
        planned = plan_run(cfg, resume, new_run, notify, data)
        if planned.run_name != cfg.run_name:
            fresh.append(record_path(planned))
            locks.append(_claim(planned, wait, notify))
        prepare_store_beside(planned.filled("tracking_uri"), beside, notify)
        return planned
    except BaseException:
        for path in fresh:  # a start that failed records no config: the next try is no "other config"
            path.unlink(missing_ok=True)
        for lock in locks:
            lock.release()
        raise
