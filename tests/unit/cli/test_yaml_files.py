"""A YAML file given to `train --recipe`, `sweep --space` or `study` that does not parse is one line naming
the file, the line and the column (malformed YAML and Python tags alike), before anything starts."""

from __future__ import annotations

import pytest

from tests.support.cli import one_error_line, run_cli
from tests.support.tiny_store import write_tiny_store

DOCUMENTS = {
    "malformed": ("name: x\n  bad: [1,\n", "not valid YAML at line 2, column 6: mapping values"),
    "python tag": (
        'loss: !!python/object/apply:os.system ["echo hacked"]\n',
        "not valid YAML at line 1, column 7: could not determine a constructor",
    ),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return write_tiny_store(tmp_path_factory.mktemp("yaml") / "tiny")


@pytest.mark.parametrize("kind", sorted(DOCUMENTS))
@pytest.mark.parametrize("command", ["train", "sweep", "study"])
def test_a_yaml_error_is_one_line_naming_the_file(store, tmp_path, command, kind):
    text, fragment = DOCUMENTS[kind]
    path = tmp_path / "file.yaml"
    path.write_text(text)
    out = tmp_path / "out"
    args = {
        "train": ["train", "--data", str(store), "--recipe", str(path)],
        "sweep": ["sweep", "--data-dir", str(store), "--space", str(path)],
        "study": ["study", str(path)],
    }[command]
    line = one_error_line(run_cli([*args, "--output-dir", str(out)]), f"{path}: {fragment}")
    assert "<unicode string>" not in line
    assert not out.exists()
