"""Checkpoints: round trip with weights_only=True; truncated, foreign and missing files give clear errors."""

from __future__ import annotations

import pickle

import pytest
import torch

from vse_ray.checkpoint_files import CHECKPOINT_FILE, load_checkpoint, save_checkpoint


def _state() -> dict:
    layer = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(layer.parameters())
    layer(torch.randn(4, 3)).sum().backward()
    opt.step()
    return {
        "epoch": 2,
        "model": layer.state_dict(),
        "optimizer": opt.state_dict(),
        "scheduler": {"step_size": 15, "last_epoch": 2},
        "config": {"loss": "vsepp", "cs_ks": [5, 10]},
        "model_name": "vsepp",
        "model_args": {"vocab_size": 10, "cnn": None},
        "history": [{"epoch": 1, "rsum": 10.0}, {"epoch": 2, "rsum": 12.5}],
    }


def test_round_trip(tmp_path):
    state = _state()
    save_checkpoint(tmp_path, state)
    back = load_checkpoint(tmp_path)
    assert torch.equal(back["model"]["weight"], state["model"]["weight"])
    assert back["history"] == state["history"] and back["config"] == state["config"]
    assert load_checkpoint(tmp_path / CHECKPOINT_FILE)["epoch"] == 2


def test_truncated_checkpoint(tmp_path):
    path = save_checkpoint(tmp_path, _state())
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(ValueError, match="expected a torch.save file, found a truncated zip archive"):
        load_checkpoint(tmp_path)


def test_foreign_checkpoints(tmp_path):
    torch.save({"state_dict": torch.nn.Linear(2, 2).state_dict()}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a vse_ray.checkpoint"):
        load_checkpoint(tmp_path / "other.pt")
    (tmp_path / "evil.pt").write_bytes(pickle.dumps(object()))
    with pytest.raises(ValueError, match="a pickle file that torch.save did not write"):
        load_checkpoint(tmp_path / "evil.pt")


def test_missing_checkpoint_and_incomplete_state(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_checkpoint(tmp_path / "nothing")
    with pytest.raises(ValueError, match="missing checkpoint keys"):
        save_checkpoint(tmp_path, {"epoch": 1})


@pytest.mark.parametrize("protocol", [2, 4])
def test_a_plain_pickle_file_is_named_as_such_and_never_loaded(tmp_path, protocol, recwarn):
    path = tmp_path / "model_best.pth"
    path.write_bytes(pickle.dumps({"model": [1, 2, 3]}, protocol=protocol))
    with pytest.raises(
        ValueError, match=r"found a pickle file that torch.save did not write \(pickle.dump\?\)$"
    ):
        load_checkpoint(path)
    assert not [w for w in recwarn if "pickle protocol" in str(w.message)]
