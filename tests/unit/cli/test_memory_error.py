"""A worker killed by Ray's memory monitor, or a local Ray that does not start in time, ends a command with
one line and the resume hint."""

from __future__ import annotations

import pytest
import typer
from ray.exceptions import OutOfMemoryError

from vse_ray.cli.errors import MEMORY_CODE, RAY_START_CODE, memory_killed, readable_errors


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


def ray_start() -> None:
    try:  # the exception ray._private.node raises when the raylet does not register in 30 s
        raise Exception("The current node timed out during startup. This could happen because ...")
    except Exception as err:
        raise RuntimeError("ray.init failed") from err


def test_ray_start_timeout_is_one_line_with_the_resume_hint(capsys):
    with pytest.raises(typer.Exit) as ended:
        readable_errors(ray_start)()
    assert ended.value.exit_code == RAY_START_CODE
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "did not start" in lines[0] and "run the same command again" in lines[0]
    assert not memory_killed(RuntimeError("ray.init failed"))
    with pytest.raises(RuntimeError):
        readable_errors(ray_start)(debug=True)
