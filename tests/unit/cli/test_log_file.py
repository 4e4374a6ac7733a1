"""Ray's and MLflow's log records go to the command's log file, once; Ray Data progress is plain lines."""

from __future__ import annotations

import logging

import pytest
import ray.data

from vse_ray.log_file import HANDLER_NAME, LIBRARY_LOGGERS, loggers_restored, route_library_logs
from vse_ray.ray_session import plain_data_progress


@pytest.fixture()
def saved_loggers():
    """The library loggers as they were, after the test."""
    with loggers_restored():
        yield


def test_library_records_go_to_one_log_file_not_the_console(tmp_path, saved_loggers, capsys):
    first = route_library_logs(tmp_path / "a")
    path = route_library_logs(tmp_path / "b")  # a second command in the process: the file is replaced
    for name in ("ray", "ray.data", "mlflow", "alembic"):
        logging.getLogger(name).warning("line of %s", name)
    lines = path.read_text().splitlines()
    assert path == (tmp_path / "b" / "logs" / "vse_ray.log").resolve()
    assert [line.split(": ", 1)[1] for line in lines] == [
        "line of ray",
        "line of ray.data",
        "line of mlflow",
        "line of alembic",
    ]
    assert first.read_text() == ""
    assert "line of" not in capsys.readouterr().err
    for name in LIBRARY_LOGGERS:
        ours = [h for h in logging.getLogger(name).handlers if h.get_name() == HANDLER_NAME]
        assert len(ours) == 1


def test_data_progress_is_plain_lines_when_stdout_is_not_a_terminal():
    context = ray.data.DataContext.get_current()
    saved = (context.enable_progress_bars, context.use_ray_tqdm, context.enable_rich_progress_bars)
    try:
        plain_data_progress()  # pytest's captured stdout is not a terminal
        assert (context.enable_progress_bars, context.use_ray_tqdm, context.enable_rich_progress_bars) == (
            True,
            False,
            False,
        )
    finally:
        context.enable_progress_bars, context.use_ray_tqdm, context.enable_rich_progress_bars = saved


def test_the_loggers_are_as_before_once_the_block_ends(tmp_path):
    import mlflow  # noqa: F401  (sets its loggers' handlers when first imported)

    before = {name: list(logging.getLogger(name).handlers) for name in LIBRARY_LOGGERS}
    with loggers_restored():
        path = route_library_logs(tmp_path)
    assert {name: list(logging.getLogger(name).handlers) for name in LIBRARY_LOGGERS} == before
    logging.getLogger("ray").warning("after the block")
    assert "after the block" not in path.read_text()


def test_mlflow_prints_no_view_run_lines(tmp_path, saved_loggers, monkeypatch, capsys):
    """MLflow prints "🏃 View run … at: …" when a run on a tracking server ends; a command's console does
    not (here it would ask the server for the run, and none answers)."""
    from mlflow.tracking._tracking_service.client import TrackingServiceClient

    monkeypatch.delenv("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", raising=False)
    route_library_logs(tmp_path)
    TrackingServiceClient("http://127.0.0.1:9")._log_url("0123")
    assert capsys.readouterr().out == ""
