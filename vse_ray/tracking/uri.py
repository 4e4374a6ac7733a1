"""Tracking URIs: the default store, credentials kept out of every URI, and how to open the MLflow UI."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

DEFAULT_UI = "http://127.0.0.1:5000"
TRACKING_URI_ENV = "MLFLOW_TRACKING_URI"
# MLflow reads a tracking server's basic-auth credentials from these variables.
CREDENTIAL_ENV = ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD")


def split_userinfo(uri: str) -> tuple[str, str | None, str | None]:
    """``(uri without user:password@, user, password)``; a URI without userinfo comes back unchanged."""
    if "://" not in uri:
        return uri, None, None
    parts = urlsplit(uri)
    if "@" not in parts.netloc:
        return uri, None, None
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=host)), parts.username, parts.password


def redact_uri(uri: str) -> str:
    """``uri`` without its ``user:password@`` part: the only form that is logged, printed or stored."""
    return split_userinfo(uri)[0]


def resolve_tracking_uri(uri_or_none: str | None, output_dir: str | Path) -> str:
    """Absolute tracking URI: ``$MLFLOW_TRACKING_URI``, else ``sqlite:///<output_dir>/mlflow.db``.

    A relative ``sqlite:///x.db`` or a bare ``*.db`` path becomes absolute (Ray workers run in other working
    directories). A server URI (http://, databricks, ...) loses its ``user:password@`` part, which moves to
    MLflow's credential variables of this process (local Ray workers inherit them; on a cluster set
    ``MLFLOW_TRACKING_USERNAME`` / ``MLFLOW_TRACKING_PASSWORD`` on the nodes): the URI that is returned is
    the one logged, printed and saved in checkpoints.
    """
    uri_or_none = uri_or_none or os.environ.get(TRACKING_URI_ENV) or None
    if not uri_or_none:
        out = Path(output_dir).expanduser().resolve()
        out.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{out / 'mlflow.db'}"
    if uri_or_none.startswith("sqlite:///"):
        path = Path(uri_or_none.removeprefix("sqlite:///")).expanduser()
        path = path if uri_or_none.startswith("sqlite:////") else path.resolve()
        path.parent.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{path}"
    if "://" not in uri_or_none and uri_or_none.endswith(".db"):
        return resolve_tracking_uri(f"sqlite:///{uri_or_none}", output_dir)
    uri, *credentials = split_userinfo(uri_or_none)
    for name, value in zip(CREDENTIAL_ENV, credentials, strict=True):
        if value is not None:
            os.environ[name] = value
    return uri


def local_store(uri: str) -> Path | None:
    """The file of a local sqlite store (``sqlite:///<path>``), or None for another store."""
    return Path(uri.removeprefix("sqlite:///")) if uri.startswith("sqlite:///") else None


def ui_command(uri: str) -> str:
    """Where the MLflow UI is: the shell command that serves it for a local store, or the tracking server."""
    if uri.startswith(("http://", "https://")):
        return f"served by the tracking server {redact_uri(uri)}"
    return f"mlflow ui --backend-store-uri {uri} --host 127.0.0.1 --port 5000"


def runs_table_url(uri: str, experiment_id: str) -> str:
    """Link to the experiment's runs table (`#/experiments/<id>/runs`; the bare link opens a traces view)."""
    base = uri.rstrip("/") if uri.startswith(("http://", "https://")) else DEFAULT_UI
    return f"{base}/#/experiments/{experiment_id}/runs"
