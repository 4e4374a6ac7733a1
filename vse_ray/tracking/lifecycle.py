"""One run lifecycle: how every command that writes an MLflow run claims it, before Ray starts.

``train``, ``sweep``, ``study`` and ``demo`` claim their run the same way (:func:`claim_run_folder`):

1. a tracking server (``http[s]://``) or a PostgreSQL store answers within seconds (:func:`check_server`),
   else one line says so (MLflow itself retries for minutes);
2. the run's folder is locked: one writer per run; a second command is refused naming the holder, or queues
   behind it (``wait``); the kernel drops the lock of a killed process;
3. a local sqlite store exists (:func:`prepare_store`), created under the lock of its folder: two first
   commands would otherwise race in MLflow's schema migration. Its creation does not depend on Ray: a
   command that starts Ray creates it on a thread while Ray starts (:func:`prepare_store_beside`), once its
   refusals are behind it.

A rerun compares its config with the one the run started with (:class:`ConfigRecord`, kept in the run's
folder) and a changed config is refused listing the keys that differ (:func:`keep_config`, or train's
``--resume`` / ``--new-run`` rules in :mod:`vse_ray.train.rerun`). The MLflow run is then found again by its
stable name (:meth:`RunRecorder.open <vse_ray.tracking.recorder.RunRecorder.open>`) and ended with a status
(:meth:`~vse_ray.tracking.recorder.RunRecorder.finish`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vse_ray.disk_full import disk_full_is_an_error, is_disk_full
from vse_ray.file_lock import FolderLock
from vse_ray.json_files import write_json_atomic
from vse_ray.tracking.uri import local_store

RECORD = "vse_ray_config.json"
SERVER_TIMEOUT_S = 5.0  # a server on the network answers in well under a second
# MLflow's retries of a tracking server's requests, for the rest of the command (a variable already set is
# kept): a server that dies mid-run costs each call seconds (3 retries 1, 2 and 4 s apart; at most 60 s a
# request), not MLflow's defaults (7 retries up to 64 s apart, 120 s a request: minutes a call).
HTTP_RETRIES = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "3",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "60",
}


def _root_cause(err: BaseException) -> BaseException:
    """The innermost exception ``err`` was raised from (``[Errno 111] Connection refused``, ``timed out``)."""
    seen = {id(err)}
    while (inner := err.__cause__ or err.__context__) is not None and id(inner) not in seen:
        seen.add(id(inner))
        err = inner
    return err


def check_server(uri: str, timeout: float = SERVER_TIMEOUT_S) -> None:
    """ValueError in one line when ``uri`` is a tracking server that does not answer within ``timeout``
    seconds (:func:`server_silence`). A server that answers gets bounded retries for the command's later
    requests (:data:`HTTP_RETRIES`)."""
    silence = server_silence(uri, timeout)
    if silence is not None:
        raise ValueError(f"{silence}: start it, or pass another --tracking-uri (or MLFLOW_TRACKING_URI)")
    if uri.startswith(("http://", "https://")):
        for name, value in HTTP_RETRIES.items():
            os.environ.setdefault(name, value)


def server_silence(uri: str, timeout: float = SERVER_TIMEOUT_S) -> str | None:
    """``tracking server <uri> does not answer within <timeout> s (<why>)`` when ``uri`` is a tracking
    server that does not answer now, in one request; any HTTP answer counts (a 401 or 404 too: the server
    is there); a PostgreSQL store connects. None for a server that answers, and for other stores."""
    if uri.startswith("postgresql"):
        return _database_silence(uri, timeout)
    if not uri.startswith(("http://", "https://")):
        return None
    from mlflow.utils.credentials import get_default_host_creds
    from mlflow.utils.rest_utils import http_request

    try:
        http_request(
            get_default_host_creds(uri),
            "/health",
            "GET",
            max_retries=0,
            timeout=timeout,
            raise_on_status=False,
        )
    except Exception as err:  # MLflow wraps every failure of the request in an MlflowException
        return f"tracking server {uri} does not answer within {timeout:.0f} s ({_root_cause(err)})"
    return None


def _database_silence(uri: str, timeout: float) -> str | None:
    """Why the PostgreSQL server of ``uri`` does not take a connection within ``timeout`` seconds (its
    first line: a refused connection, a wrong password), or None. MLflow itself retries for minutes."""
    import sqlalchemy
    from sqlalchemy.pool import NullPool

    engine = sqlalchemy.create_engine(
        uri, poolclass=NullPool, connect_args={"connect_timeout": max(1, int(timeout))}
    )
    try:
        with engine.connect():
            return None
    except Exception as err:
        cause = str(_root_cause(err)).strip().splitlines()[0]
        return f"database {uri} does not take a connection within {timeout:.0f} s ({cause})"
    finally:
        engine.dispose()


def prepare_store(uri: str, notify: Callable[[str], None] = print) -> None:
    """The store ``uri`` ready to write: a server answers; a local sqlite store is created (or opened) under
    the lock of its folder, waiting for another command creating it. A full disk is one line naming the
    store, and a store it cut short is removed."""
    check_server(uri)
    db = local_store(uri)
    if db is None:
        return
    from mlflow import MlflowClient

    lock = FolderLock(db.parent, f"MLflow store {db}").acquire(wait=True, notify=notify)
    created = not db.exists()
    try:
        with disk_full_is_an_error(None, store=db):
            try:
                MlflowClient(uri).search_experiments(max_results=1)
            except Exception as err:
                if created and is_disk_full(err):  # a store cut short by the full disk: the rerun creates it
                    for path in (db, db.with_name(f"{db.name}-journal")):
                        path.unlink(missing_ok=True)
                raise
    finally:
        lock.release()


def prepare_store_beside(uri: str, start: Callable[[], None], notify: Callable[[str], None] = print) -> None:
    """:func:`prepare_store` on a thread while ``start`` (Ray's start, which does not need the store) runs on
    this one: a first command pays the longer of the two instead of their sum. An error of either is
    raised, ``start``'s first."""
    with ThreadPoolExecutor(1, thread_name_prefix="mlflow-store") as pool:
        store = pool.submit(prepare_store, uri, notify)
        try:
            start()
        finally:
            failed = store.exception()  # waits for the store
    if failed is not None:
        raise failed


def claim_run_folder(
    folder: str | Path,
    what: str,
    instead: str,
    uri: str,
    *,
    wait: bool = False,
    notify: Callable[[str], None] = print,
    store: bool = True,
) -> FolderLock:
    """Check the server, lock the run's ``folder`` (``what``: the run named in a refusal; ``instead``: the
    way out it offers), then :func:`prepare_store` (``store=False``: the caller prepares it later, beside
    Ray's start: :func:`prepare_store_beside`). The lock is held until released, until
    :func:`~vse_ray.file_lock.release_all` (the end of the command) or until the process ends.

    Raises:
        ValueError: The server does not answer, or the folder is locked (without ``wait``), naming the holder.
    """
    check_server(uri)
    lock = FolderLock(folder, what, instead).acquire(wait=wait, notify=notify)
    if not store:
        return lock
    try:
        prepare_store(uri, notify)
    except BaseException:
        lock.release()
        raise
    return lock


def config_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, list[Any]]:
    """``{key: [old, new]}`` of the keys both configs have whose values differ (as JSON values); a key only
    one has (a field added or removed by another vse_ray version) is no change."""
    new = json.loads(json.dumps(new))
    return {k: [old[k], new[k]] for k in sorted(set(old) & set(new)) if old[k] != new[k]}


def describe(changes: Mapping[str, list[Any]]) -> str:
    """``lr 0.0002 -> 0.002, epochs 30 -> 40``."""
    return ", ".join(f"{key} {old!r} -> {new!r}" for key, (old, new) in changes.items())


def flat(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts as one level of dotted keys (``train.epochs``), so a change names the key it is in.

    Each nested dict's own key holds its sorted keys (``train: ["epochs", "lr"]``): :func:`config_changes`
    passes over a key only one config has (a field of another vse_ray version), but a key added to or
    removed from what a user wrote (``--set margin=0.3``, a loss added to a study) is a change.
    """
    out: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, Mapping):
            out[f"{prefix}{key}"] = sorted(map(str, value))
            out.update(flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


@dataclass(frozen=True)
class ConfigRecord:
    """``<run folder>/vse_ray_config.json``: the config a run started with and the changes resumes made."""

    path: Path

    @classmethod
    def of(cls, folder: str | Path) -> ConfigRecord:
        return cls(Path(folder) / RECORD)

    def load(self) -> dict[str, Any] | None:
        """``{"config": ..., "changes": [...]}``, or None for a run not started yet."""
        return json.loads(self.path.read_text()) if self.path.is_file() else None

    def save(
        self, config: Mapping[str, Any], changes: list[dict[str, Any]] | None = None, **extra: Any
    ) -> None:
        """Write the config, its changes and ``extra`` entries (train: the data folder's hashes)."""
        write_json_atomic({"config": dict(config), "changes": changes or [], **extra}, self.path)


def keep_config(record: ConfigRecord, config: Mapping[str, Any], where: str, instead: str) -> None:
    """Record ``config`` for a new run; a rerun with another config is a ValueError naming ``where`` (the
    run), the keys that differ and ``instead`` (what to do)."""
    kept = record.load()
    if kept is None:
        record.save(config)
        return
    changes = config_changes(kept["config"], config)
    if changes:
        raise ValueError(f"{where} was started with another config ({describe(changes)}): {instead}")
