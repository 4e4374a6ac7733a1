"""Tracking URIs: the default sqlite store in the output folder, and how to open the MLflow UI on it."""

from __future__ import annotations

from pathlib import Path

DEFAULT_UI = "http://127.0.0.1:5000"


def resolve_tracking_uri(uri_or_none: str | None, output_dir: str | Path) -> str:
    """Absolute tracking URI: `sqlite:///<output_dir>/mlflow.db` by default.

    A relative `sqlite:///x.db` or a bare `*.db` path becomes absolute (Ray workers run in other working
    directories); any other URI (http://, databricks, ...) is returned unchanged.
    """
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
    return uri_or_none


def ui_command(uri: str) -> str:
    """Shell command that serves the MLflow UI for a local store (empty for a tracking server)."""
    if uri.startswith(("http://", "https://")):
        return ""
    return f"mlflow ui --backend-store-uri {uri} --host 127.0.0.1 --port 5000"


def runs_table_url(uri: str, experiment_id: str) -> str:
    """Link to the experiment's runs table (`#/experiments/<id>/runs`; the bare link opens a traces view)."""
    base = uri.rstrip("/") if uri.startswith(("http://", "https://")) else DEFAULT_UI
    return f"{base}/#/experiments/{experiment_id}/runs"
