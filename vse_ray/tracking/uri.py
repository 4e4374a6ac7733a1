"""Tracking URIs: the default store, supported schemes, credentials kept out of every URI, and how to open
the MLflow UI."""

from __future__ import annotations

import os
import shlex
from importlib.metadata import entry_points
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

DEFAULT_UI = "http://127.0.0.1:5000"
TRACKING_URI_ENV = "MLFLOW_TRACKING_URI"
# MLflow reads a tracking server's basic-auth credentials from these variables.
CREDENTIAL_ENV = ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD")
# The database stores MLflow opens through SQLAlchemy (`postgresql+psycopg://`: a dialect with its driver).
DATABASE_SCHEMES = ("postgresql", "mysql", "mssql")
# The schemes of the stores MLflow opens (its tracking store registry), plugins' come from their entry points.
STORE_SCHEMES = ("sqlite", "file", "http", "https", "databricks", "databricks-uc", "uc", *DATABASE_SCHEMES)
PLUGIN_GROUP = "mlflow.tracking_store"
# libpq (psycopg, psycopg2) reads a PostgreSQL password from this variable: it stays out of the URI.
PG_PASSWORD_ENV = "PGPASSWORD"
POSTGRES_EXTRA = "pip install 'vse_ray[postgres]'"


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
    directories). A scheme MLflow has no store for is refused (:func:`check_scheme`); a database URI keeps
    its credentials working without its password (:func:`database_uri`). A server URI (http://,
    databricks, ...) loses its ``user:password@`` part, which moves to MLflow's credential variables of this
    process (local Ray workers inherit them; on a cluster set ``MLFLOW_TRACKING_USERNAME`` /
    ``MLFLOW_TRACKING_PASSWORD`` on the nodes): the URI that is returned is the one logged, printed and
    saved in checkpoints.
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
    scheme = check_scheme(uri_or_none)
    if scheme.split("+")[0] in DATABASE_SCHEMES:
        return database_uri(uri_or_none)
    uri, *credentials = split_userinfo(uri_or_none)
    for name, value in zip(CREDENTIAL_ENV, credentials, strict=True):
        if value is not None:
            os.environ[name] = value
    return uri


def check_scheme(uri: str) -> str:
    """The URI's scheme (lower case; ``""`` for a path); ValueError in one line for a scheme MLflow has no
    store for (``ftp://``), before anything starts or is recorded."""
    scheme = uri.partition("://")[0].lower() if "://" in uri else ""
    plugins = {entry.name for entry in entry_points(group=PLUGIN_GROUP)}
    if scheme and scheme.split("+")[0] not in {*STORE_SCHEMES, *plugins}:
        raise ValueError(
            f"tracking URI {redact_uri(uri)}: MLflow has no store for {scheme}://; use sqlite:///PATH, "
            "http[s]://HOST:PORT (a tracking server) or postgresql+psycopg://USER@HOST/DB"
        )
    return scheme


def database_uri(uri: str) -> str:
    """A database store's URI without its password, its driver checked (one line saying what to install).

    A PostgreSQL password moves to ``$PGPASSWORD`` of this process, which the driver (libpq) reads: the URI
    that is returned, with the user but no password, is the one logged, printed and saved. Without
    psycopg2, ``postgresql://`` means ``postgresql+psycopg://`` (the driver of the ``postgres`` extra).
    Another database's password is refused: its driver reads none from the environment.
    """
    from sqlalchemy.engine import make_url

    parts = urlsplit(uri)
    password = parts.password
    if password is not None:
        user = parts.netloc.rpartition("@")[0].partition(":")[0]
        host = parts.netloc.rpartition("@")[2]
        uri = urlunsplit(parts._replace(netloc=f"{user}@{host}" if user else host))
    scheme = parts.scheme.lower()
    if scheme == "postgresql" and not _importable("psycopg2") and _importable("psycopg"):
        uri = "postgresql+psycopg" + uri[len(parts.scheme) :]
    dialect = make_url(uri).get_dialect()
    try:
        dialect.import_dbapi()
    except ImportError as err:
        extra = POSTGRES_EXTRA if scheme.startswith("postgresql") else f"install the driver of {scheme}://"
        raise ValueError(
            f"tracking URI {uri}: its database driver is not installed ({err}): {extra}"
        ) from None
    if password is not None:
        if not scheme.startswith("postgresql"):
            raise ValueError(
                f"tracking URI {uri}: a password in a {scheme}:// URI would be saved with the run; give it "
                "to the database driver its own way (an option file) and drop it from the URI"
            )
        os.environ[PG_PASSWORD_ENV] = unquote(password)
    return uri


def _importable(module: str) -> bool:
    from importlib.util import find_spec

    return find_spec(module) is not None


def local_store(uri: str) -> Path | None:
    """The file of a local sqlite store (``sqlite:///<path>``), or None for another store."""
    return Path(uri.removeprefix("sqlite:///")) if uri.startswith("sqlite:///") else None


def ui_command(uri: str) -> str:
    """Where the MLflow UI is: the shell command that serves it for a local store (the URI shell-quoted:
    a folder may hold spaces), or the tracking server."""
    if uri.startswith(("http://", "https://")):
        return f"served by the tracking server {redact_uri(uri)}"
    return f"mlflow ui --backend-store-uri {shlex.quote(uri)} --host 127.0.0.1 --port 5000"


def runs_table_url(uri: str, experiment_id: str) -> str:
    """Link to the experiment's runs table (`#/experiments/<id>/runs`; the bare link opens a traces view)."""
    base = uri.rstrip("/") if uri.startswith(("http://", "https://")) else DEFAULT_UI
    return f"{base}/#/experiments/{experiment_id}/runs"
