import numpy as np
import pytest

import vse_ray.relevance.spice as spice_module
from vse_ray.relevance import spice_matrix
from vse_ray.relevance.spice import CORENLP_JARS


def test_missing_corenlp_jars_raise_runtime_error_naming_them(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(spice_module, "spice_lib_dir", lambda: tmp_path)
    with pytest.raises(RuntimeError, match="stanford-corenlp-3.6.0-models.jar") as info:
        spice_matrix(["a dog"], [["a dog runs"]])
    assert str(tmp_path / CORENLP_JARS[0]) in str(info.value)


def test_missing_java_raises_runtime_error_naming_it(tmp_path, monkeypatch) -> None:
    for jar in CORENLP_JARS:
        (tmp_path / jar).touch()
    monkeypatch.setattr(spice_module, "spice_lib_dir", lambda: tmp_path)
    monkeypatch.setattr(spice_module.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="Java runtime") as info:
        spice_matrix(["a dog"], [["a dog runs"]])
    assert "stanford" not in str(info.value).split("missing:")[1].split(".")[0]


class _RecordingSpice:
    """Stands in for pycocoevalcap's Spice: scores each pair by a value derived from its texts."""

    calls: list[tuple[dict, dict]] = []

    def compute_score(self, gts, res):
        _RecordingSpice.calls.append((gts, res))
        ids = sorted(gts)
        scores = [{"All": {"f": len(res[i][0]) + 100.0 * len(gts[i])}} for i in ids]
        return float(np.mean([s["All"]["f"] for s in scores])), scores


def test_every_pair_is_scored_once_and_reshaped_hypotheses_by_images(tmp_path, monkeypatch) -> None:
    import pycocoevalcap.spice.spice as pycoco_spice

    for jar in CORENLP_JARS:
        (tmp_path / jar).touch()
    monkeypatch.setattr(spice_module, "spice_lib_dir", lambda: tmp_path)
    monkeypatch.setattr(spice_module.shutil, "which", lambda name: "/usr/bin/java")
    monkeypatch.setattr(pycoco_spice, "Spice", _RecordingSpice)
    hyps = ["a", "bb", "ccc"]
    refs = [["x"], ["x", "y"]]

    got = spice_matrix(hyps, refs)

    expected = np.array([[len(h) + 100.0 * len(r) for r in refs] for h in hyps])
    np.testing.assert_array_equal(got, expected)
    gts, res = _RecordingSpice.calls[-1]
    assert len(gts) == len(res) == 6


def test_bad_references_raise_value_error_before_the_java_check() -> None:
    with pytest.raises(ValueError, match=r"references\[0\] is empty"):
        spice_matrix(["a dog"], [[]])
