"""A worker killed by Ray's memory monitor ends a command with one line and the resume hint."""

from __future__ import annotations

import pytest
import typer
from ray.exceptions import OutOfMemoryError

from vse_ray.cli.errors import MEMORY_CODE, memory_killed, readable_errors


def study() -> None:
    try:
        raise OutOfMemoryError("Task was killed due to the node running low on memory.")
    except OutOfMemoryError as err:  # as Tune's controller re-raises an actor killed for memory
        raise RuntimeError("Caught unexpected exception: 3 worker(s) were killed") from err


def test_memory_kill_is_one_line_with_the_resume_hint(capsys):
    with pytest.raises(typer.Exit) as ended:
        readable_errors(study)()
    assert ended.value.exit_code == MEMORY_CODE
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "ran low on memory" in lines[0] and "finished runs are kept" in lines[0]
    with pytest.raises(RuntimeError):
        readable_errors(study)(debug=True)


def test_other_errors_are_not_taken_for_memory():
    assert not memory_killed(RuntimeError("boom"))
