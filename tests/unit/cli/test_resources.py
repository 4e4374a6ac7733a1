"""Shipped recipes, studies and tune spaces: names resolve from the package, paths as paths."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from vse_ray.cli.main import app
from vse_ray.resources import resource_dir, resource_names, resource_path


@pytest.mark.parametrize("kind", ["recipe", "study", "space"])
def test_names_resolve_inside_the_package(kind):
    names = resource_names(kind)
    assert names
    path = resource_path(kind, names[0])
    assert path.parent == resource_dir(kind) and path.parent.parent.name == "resources"


def test_a_path_wins_over_a_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.yaml").write_text("loss: vsepp\n")
    assert resource_path("space", "mine.yaml").resolve() == tmp_path / "mine.yaml"
    with pytest.raises(ValueError, match=r"^space 'mine': no such file or shipped space; shipped: \['bcls'"):
        resource_path("space", "mine")
    with pytest.raises(ValueError, match="no such file"):
        resource_path("recipe", "sub/vsepp_f30k_resnet152")


def test_recipes_command_lists_name_row_model_loss():
    result = CliRunner().invoke(app, ["recipes"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["recipe", "model", "loss", "paper", "row"]
    assert len(lines) == 2 + len(resource_names("recipe"))
    assert max(map(len, lines)) <= 120
    row = next(line for line in lines if line.startswith("vsepp_f30k_resnet152"))
    assert row.split()[1:3] == ["vsepp", "vsepp"] and "vsepp.md Table 3: 3.13 VSE++ (ResNet152)" in row
