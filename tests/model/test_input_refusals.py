"""Hostile or unlucky input is refused in one line naming the file, key or row, before Ray starts."""

from __future__ import annotations

import pytest

from tests.model.test_cli_errors import _one_error_line, _run
from tests.model.tiny_store import write_tiny_store


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return write_tiny_store(tmp_path_factory.mktemp("refusals") / "tiny")


@pytest.mark.parametrize("name", ["../../x", "a/b", ".hidden"])
def test_a_run_name_that_leaves_the_output_folder_is_refused(store, tmp_path, name):
    out = tmp_path / "deep" / "out"
    result = _run(["train", "--data", str(store), "--output-dir", str(out), "--run-name", name])
    _one_error_line(result, "run_name: expected one folder name", repr(name))
    assert not out.exists() and not (tmp_path / "x").exists()
