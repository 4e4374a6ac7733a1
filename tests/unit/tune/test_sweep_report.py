"""The sweep's last screen: searched params, headline metrics per direction, where the rest is."""

from __future__ import annotations

from vse_ray.tune.search_space import parse_search_space
from vse_ray.tune.sweep_report import SweepResult, headline_table, sweep_summary

SPACE = {
    "loss": "lseh",
    "params": {"lr": {"loguniform": [1e-4, 1e-2]}, "loss_params": {"margin": [0.1, 0.2]}},
}
METRICS = {
    **{f"R_at_{k}_{d}": 10.0 * k + (d == "t2i") for k in (1, 5, 10) for d in ("i2t", "t2i")},
    **{
        f"{m}_{d}": 0.25 for m in ("CS_at_100", "CS_at_1000", "NCS_at_10", "NCS_at_5") for d in ("i2t", "t2i")
    },
    "rsum": 163.0,
    "train_loss": 0.5,
    "medr_i2t": 2.0,
}
CONFIG = {"loss": "lseh", "lr": 0.000123456, "loss.margin": 0.2, "data_dir": "/data/x", "epochs": 30}


def _result(**changes) -> SweepResult:
    fields = dict(
        name="f30k-lseh",
        path="/runs/f30k-lseh",
        finished=True,
        num_trials=2,
        num_ended=2,
        num_errors=0,
        best_trial_id="abc_00001",
        best_config=CONFIG,
        best_metrics=METRICS,
        best_checkpoint="/runs/f30k-lseh/abc_00001/checkpoint_000002",
        parent_run_id="p" * 32,
        best_run_id="r" * 32,
        experiment_id="3",
        tracking_uri="sqlite:////runs/mlflow.db",
        runs_url="http://127.0.0.1:5000/#/experiments/3/runs",
        report="/runs/f30k-lseh/sweep_report.json",
    )
    return SweepResult(**(fields | changes))


def test_headline_table_has_one_row_per_direction():
    lines = headline_table(METRICS).splitlines()
    assert lines[0].split() == ["R@1", "R@5", "R@10", "CS@100", "CS@1000", "NCS@10"]
    assert lines[2].split() == ["i2t", "10.0", "50.0", "100.0", "0.250", "0.250", "0.250"]
    assert lines[3].split() == ["t2i", "11.0", "51.0", "101.0", "0.250", "0.250", "0.250"]
    assert headline_table({"R_at_1_i2t": 3.0}).splitlines()[0].split() == ["R@1"]


def test_summary_shows_searched_params_headline_metrics_and_the_ui():
    lines = sweep_summary(_result(), parse_search_space(SPACE)).splitlines()
    assert lines[:2] == ["Sweep f30k-lseh: 2/2 trials ended, 0 failed", "Best trial abc_00001: rsum = 163.0"]
    assert lines[3].split() == ["loss", "loss.margin", "lr"] and lines[5].split() == [
        "lseh",
        "0.2",
        "0.0001235",
    ]
    assert lines[7].split()[0] == "R@1" and lines[9].startswith("i2t") and lines[10].startswith("t2i")
    text = "\n".join(lines)
    assert "train_loss" not in text and "medr" not in text and "NCS@5" not in text and "data_dir" not in text
    assert "Full report (config, every metric): /runs/f30k-lseh/sweep_report.json" in text
    assert lines[-2].endswith(
        "mlflow ui --backend-store-uri sqlite:////runs/mlflow.db --host 127.0.0.1 --port 5000"
    )
    assert lines[-1] == "  then open http://127.0.0.1:5000/#/experiments/3/runs"
    assert max(len(line) for line in lines[:-2]) <= 120


def test_summary_of_an_interrupted_sweep_without_results():
    result = _result(finished=False, num_ended=0, best_trial_id=None, best_config={}, best_metrics={})
    lines = sweep_summary(result, parse_search_space(SPACE)).splitlines()
    assert (
        lines[0].endswith("(interrupted: run again to resume)") and lines[1] == "No trial reported a result."
    )
