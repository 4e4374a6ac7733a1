"""The study summary on fixed records: intervals per row, paired differences by seed, marks and tables."""

from __future__ import annotations

import csv
import io

import pytest
from scipy import stats

from vse_ray.metrics.registry import STUDY_KEYS
from vse_ray.study.stats import Interval
from vse_ray.study.summary import (
    HEADLINE_METRICS,
    ROW_TAG,
    SEED_TAG,
    SIZE_TAG,
    Evidence,
    RunRecord,
    collect_runs,
    summarize,
    summary_csv,
    summary_markdown,
    summary_text,
)

BASE = [300.0, 310.0, 305.0]
BETTER = [306.0, 315.0, 309.0]  # +6, +5, +4: outside the seed noise
NOISY = [290.0, 320.0, 301.0]  # -10, +10, -4


def _records() -> list[RunRecord]:
    out = []
    for row, values in (("vsepp", BASE), ("bcls", BETTER), ("bcls-shuffled", NOISY)):
        for seed, value in enumerate(values):
            out.append(RunRecord(row, seed, 0, {"rsum": value, "CS_at_100_i2t": 0.1 * (seed + 1)}))
    return out


def test_cells_pair_by_seed_and_match_scipy():
    cells = {
        (c.row, c.metric): c for c in summarize(_records()[::-1], "vsepp", ["vsepp", "bcls", "bcls-shuffled"])
    }
    better = cells[("bcls", "rsum")]
    reference = stats.ttest_rel(BETTER, BASE).confidence_interval(0.95)
    assert (better.diff.low, better.diff.high) == pytest.approx((reference.low, reference.high))
    assert better.diff.excludes_zero and not cells[("bcls-shuffled", "rsum")].diff.excludes_zero
    assert cells[("vsepp", "rsum")].diff is None
    assert cells[("bcls", "CS_at_100_i2t")].diff.mean == pytest.approx(0.0)


def test_tables():
    cells = summarize(_records(), "vsepp", ["vsepp", "bcls", "bcls-shuffled"])
    text = summary_text(cells, "vsepp").splitlines()
    assert text[0].split() == ["run", "rsum", "CS@100"]  # the Δ goes under its value; 3 seeds everywhere
    assert [line.split()[0] for line in text[2:7]] == ["vsepp", "bcls", "Δ", "bcls-shuffled", "Δ"]
    assert text[4].split() == ["Δ", "+5.0*", "+0.000"] and text[6].split()[:2] == ["Δ", "-1.3"]
    assert "*" not in text[6] and "mean ± std over 3 seeds" in text[7]
    assert max(map(len, text)) <= 120
    markdown = summary_markdown(cells, "vsepp")
    assert "| bcls | 3 | 310.0 ± 4.6 [" in markdown and "+5.0 [+2.5, +7.5]*" in markdown
    rows = list(csv.DictReader(io.StringIO(summary_csv(cells))))
    assert len(rows) == 6 and rows[0]["outside_seed_noise"] in ("", "True", "False")


def test_console_table_fits_120_columns_with_every_headline_metric():
    keys = [key for _, key in HEADLINE_METRICS]
    rows = ["vsepp", "ladder_auto", "bcls-no-kendall", "bcls-shuffled"]
    records = [
        RunRecord(row, seed, 0, {key: (-123.4 if key == "rsum" else -0.123) * (seed + i + 1) for key in keys})
        for i, row in enumerate(rows)
        for seed in range(3)
    ]
    text = summary_text(summarize(records, "vsepp", rows), "vsepp").splitlines()
    assert text[0].split() == ["run", "rsum", "R@1", "i2t", "R@1", "t2i", "CS@100", "CS@1000"] + [
        "CS@100",
        "scene",
        "CS@1000",
        "scene",
    ]
    assert max(map(len, text)) <= 120 and "left out" not in "".join(text)
    one = summary_text(summarize([r for r in records if r.seed == 0], "vsepp", rows), "vsepp")
    assert "±" not in one.split("One seed")[0] and "One seed" in one


def _settled(mean: float, low: float, high: float) -> Interval:
    return Interval(3, mean, float("nan"), low, high)


def test_a_delta_against_the_settled_sign_of_the_evidence_gets_the_evidence_under_it():
    # bcls: +5.0 here; the evidence settles rsum at -2.0 [-3.0, -1.0] (against) and CS@100 at +0.1 (with)
    evidence = Evidence(
        "big_study",
        "4,000 training images, 3 seeds",
        {
            ("bcls", "rsum"): _settled(-2.0, -3.0, -1.0),
            ("bcls", "CS_at_100_i2t"): _settled(0.1, 0.05, 0.15),
            ("bcls-shuffled", "rsum"): _settled(5.0, -1.0, 11.0),  # not settled: no sign to contradict
        },
    )
    cells = summarize(_records(), "vsepp", ["vsepp", "bcls", "bcls-shuffled"])
    text = summary_text(cells, "vsepp", evidence=evidence).splitlines()
    assert [line.split()[0] for line in text[2:8]] == ["vsepp", "bcls", "Δ", "≠", "bcls-shuffled", "Δ"]
    assert text[5].split() == ["≠", "study", "-3.0…-1.0"]  # under the rsum Δ, in the rsum column
    assert text[5].index("-3.0…-1.0") + len("-3.0…-1.0") == text[4].index("+5.0*") + len("+5.0*")
    assert "* = its 95 % t-interval excludes 0" in "\n".join(text)  # the seed-noise mark keeps its meaning
    assert any(
        line.startswith("≠ study: ") and "big_study" in line and "4,000 training" in line for line in text
    )
    assert max(map(len, text)) <= 120
    plain = summary_text(cells, "vsepp")  # no evidence: no such line
    assert "≠" not in plain and summary_text(cells, "vsepp", evidence=Evidence("s", "", {})) == plain


def test_the_evidence_line_fits_120_columns_when_every_headline_column_is_against_it():
    keys = [key for _, key in HEADLINE_METRICS]
    records = [
        RunRecord(
            row,
            seed,
            0,
            {key: (100.0 if key == "rsum" else 0.1) * (seed + 1) * (row == "vsepp") + 1 for key in keys},
        )
        for row in ("vsepp", "bcls-no-kendall")
        for seed in range(3)
    ]
    against = {("bcls-no-kendall", key): _settled(1.0, 0.5, 1.5) for key in keys}
    against.update({("bcls-no-kendall", "rsum"): _settled(123.4, 100.5, 146.3)})
    text = summary_text(
        summarize(records, "vsepp", ["vsepp", "bcls-no-kendall"]),
        "vsepp",
        evidence=Evidence("s", "x", against),
    )
    line = next(line for line in text.splitlines() if line.strip().startswith("≠ study "))
    assert line.count("…") == len(keys) and max(map(len, text.splitlines())) <= 120


def test_runs_are_read_back_from_their_test_groups(mlflow_uri, tmp_path):
    """collect_runs reads what the run recorder wrote: `test/...` and `test_scene/...` as evaluation keys."""
    from mlflow import MlflowClient

    from vse_ray.tracking.recorder import RunRecorder
    from vse_ray.tracking.runs import get_or_create_experiment
    from vse_ray.tune.mlflow_trials import PARENT_TAG

    client = MlflowClient(mlflow_uri)
    experiment = get_or_create_experiment("study", mlflow_uri, tmp_path)  # artifacts under tmp_path
    parent = client.create_run(experiment).info.run_id
    tags = {PARENT_TAG: parent, ROW_TAG: "bcls", SEED_TAG: "1", SIZE_TAG: "0"}
    run = RunRecorder.open(experiment, "bcls-s1", mlflow_uri, {"loss": "bcls"}, tags)
    evaluation = {"rsum": 300.0, "CS_at_100_i2t": 0.5, "CS_at_100_i2t_scene": 0.4, "NCS_at_10_i2t": 0.2}
    run.record_evaluation("test", "full", {"metrics": evaluation})
    assert set(client.get_run(run.run_id).data.metrics) == {
        "test/rsum",
        "test/CS_at_100_i2t",
        "test_scene/CS_at_100_i2t",
    }  # headline metrics only; the full report is an artifact
    artifacts = {a.path for a in client.list_artifacts(run.run_id, "evaluation")}
    assert artifacts == {"evaluation/test_full.json", "evaluation/test_full.csv"}
    [record] = collect_runs(mlflow_uri, experiment, parent)
    assert (record.row, record.seed) == ("bcls", 1)
    assert record.metrics == {"rsum": 300.0, "CS_at_100_i2t": 0.5, "CS_at_100_i2t_scene": 0.4}
    # a study's test run logs STUDY_KEYS (NCS, tau, ...) too, and the summary reads them back
    tags = {**tags, SEED_TAG: "2"}
    run = RunRecorder.open(experiment, "bcls-s2", mlflow_uri, {"loss": "bcls"}, tags)
    run.record_evaluation("test", "full", {"metrics": {**evaluation, "tau_i2t_scene": 0.3}}, STUDY_KEYS)
    record = next(r for r in collect_runs(mlflow_uri, experiment, parent) if r.seed == 2)
    assert record.metrics == {**evaluation, "tau_i2t_scene": 0.3}


def test_trade_off_epochs_start_after_each_sizes_own_warm_up(mlflow_uri, tmp_path):
    """With `warmup_steps` a smaller train set warms up for more epochs; its warm-up epochs (carried in the
    run's history from the shared checkpoint) are not plotted as the loss's own."""
    from mlflow import MlflowClient

    from vse_ray.study.context import StudyContext
    from vse_ray.study.spec import StudySpec
    from vse_ray.study.summary_stage import epoch_histories, run_histories
    from vse_ray.tracking.recorder import METRICS_ARTIFACT
    from vse_ray.tracking.runs import get_or_create_experiment
    from vse_ray.tune.mlflow_trials import PARENT_TAG

    client = MlflowClient(mlflow_uri)
    experiment = get_or_create_experiment("study", mlflow_uri, tmp_path)
    parent = client.create_run(experiment).info.run_id
    for size in (400, 4000):
        tags = {PARENT_TAG: parent, ROW_TAG: "sam", SEED_TAG: "0", SIZE_TAG: str(size)}
        run = client.create_run(experiment, tags=tags).info.run_id
        history = [{"epoch": e, "rsum": 10.0 * e} for e in range(1, 13)]
        client.log_dict(run, {"best": history[-1], "history": history}, METRICS_ARTIFACT)
    spec = StudySpec(name="s", baseline="vsepp", losses={"vsepp": {}}, warmup_epochs=3)
    ctx = StudyContext(spec, tmp_path, "", mlflow_uri, experiment, parent, warmup_epochs={400: 10, 4000: 1})
    histories = epoch_histories(ctx, run_histories(mlflow_uri, experiment, parent))
    assert [e["epoch"] for e in histories["sam@400"][0]] == [11, 12]
    assert [e["epoch"] for e in histories["sam@4000"][0]] == list(range(2, 13))


def test_tradeoff_plot_uses_the_cs_keys_logged():
    from vse_ray.study.plots import tradeoff_figure, tradeoff_keys

    assert tradeoff_keys({"rsum", "CS_at_5_i2t", "CS_at_10_i2t", "CS_at_10_t2i"}) == [
        "CS_at_5_i2t",
        "CS_at_10_i2t",
    ]
    assert tradeoff_keys({"CS_at_5_i2t", "CS_at_100_i2t", "CS_at_1000_i2t_scene"}) == [
        "CS_at_100_i2t",
        "CS_at_1000_i2t_scene",
    ]
    runs = {"vsepp": [[{"epoch": 2, "rsum": 300.0, "CS_at_100_i2t": 0.1}, {"epoch": 3, "rsum": 310.0}]]}
    figure = tradeoff_figure(runs)
    assert len(figure.axes) == 1 and figure.axes[0].get_xlabel() == "validation rsum"
    assert tradeoff_figure({"vsepp": [[{"epoch": 2, "rsum": 300.0}]]}) is None


def test_a_metric_keeps_one_number_style_whatever_its_value():
    records = [
        RunRecord(row, seed, 0, {"R_at_1_i2t": value, "CS_at_100_i2t": 0.5})
        for row, values in (("vsepp", [12.0, 11.0, 12.5]), ("bcls", [9.6, 9.8, 9.4]))
        for seed, value in enumerate(values)
    ]
    text = summary_text(summarize(records, "vsepp"), "vsepp").splitlines()
    assert text[3].split()[:4] == ["bcls", "9.6", "±", "0.2"]  # a recall below 10 keeps one decimal
    assert "-2.2" in text[4] and "0.500 ± 0.000" in text[3]  # the fraction column keeps three


def test_a_weak_baseline_is_named_on_the_first_line():
    from vse_ray.study.summary import strength_note

    cells = summarize(_records(), "vsepp", ["vsepp", "bcls", "bcls-shuffled"])
    assert strength_note(cells, "vsepp", 300.0) is None
    note = strength_note(cells, "vsepp", 400.0)
    assert note.startswith("WEAK BASELINE: vsepp test rsum 305.0 < min_baseline_rsum 400")


@pytest.mark.parametrize(
    ("rsums", "rising"),
    [
        ([100.0, 120.0, 130.0], True),  # best at the last epoch, above the one before: not settled
        ([100.0, 130.0, 120.0], False),  # peaked earlier
        ([100.0, 130.0, 130.0], False),  # flat at the end
        ([140.0, 120.0, 130.0], False),  # rising, but below an earlier best
        ([130.0], False),  # one epoch: nothing to compare with
    ],
)
def test_still_rising_means_the_last_epoch_is_the_best_and_above_the_one_before(rsums, rising):
    from vse_ray.study.summary import still_rising

    history = [{"epoch": e, "rsum": value, "R_at_1_i2t": 1.0} for e, value in enumerate(rsums, 1)]
    assert still_rising(history) is rising


def test_rows_with_runs_still_rising_are_marked_and_the_mark_explained():
    from vse_ray.study.summary import RISING, rising_runs

    flat, up = [{"rsum": 10.0}, {"rsum": 9.0}], [{"rsum": 9.0}, {"rsum": 10.0}]
    rising = rising_runs(
        {(0, "vsepp"): [up, up, up], (0, "bcls"): [flat, up, flat], (0, "bcls-shuffled"): [flat]}
    )
    assert rising == {(0, "vsepp"): (3, 3), (0, "bcls"): (1, 3), (0, "bcls-shuffled"): (0, 1)}
    cells = summarize(_records(), "vsepp", ["vsepp", "bcls", "bcls-shuffled"])
    text = summary_text(cells, "vsepp", rising).splitlines()
    assert [line.strip().split("  ")[0] for line in text[2:7]] == [
        f"vsepp {RISING}",
        f"bcls {RISING}1/3",
        "Δ",
        "bcls-shuffled",
        "Δ",
    ]
    assert text[-2].startswith(f"{RISING} = validation rsum still rising at the last epoch")
    assert max(map(len, text)) <= 120
    assert RISING not in summary_text(cells, "vsepp", {(0, "vsepp"): (0, 3)})  # nothing rising: no mark


def test_run_histories_include_the_warm_up_and_leave_out_runs_without_metrics(mlflow_uri, tmp_path):
    """Whether a run was still rising is judged on its whole history; a run still training has none yet."""
    from mlflow import MlflowClient

    from vse_ray.study.summary import rising_runs
    from vse_ray.study.summary_stage import run_histories
    from vse_ray.tracking.recorder import METRICS_ARTIFACT
    from vse_ray.tracking.runs import get_or_create_experiment
    from vse_ray.tune.mlflow_trials import PARENT_TAG

    client = MlflowClient(mlflow_uri)
    experiment = get_or_create_experiment("study", mlflow_uri, tmp_path)
    parent = client.create_run(experiment).info.run_id
    for seed, last in ((0, 40.0), (1, 25.0), (2, None)):
        tags = {PARENT_TAG: parent, ROW_TAG: "bcls", SEED_TAG: str(seed), SIZE_TAG: "0"}
        run = client.create_run(experiment, tags=tags).info.run_id
        if last is not None:
            history = [{"epoch": 1, "rsum": 20.0}, {"epoch": 2, "rsum": 30.0}, {"epoch": 3, "rsum": last}]
            client.log_dict(run, {"best": history[-1], "history": history}, METRICS_ARTIFACT)
    histories = run_histories(mlflow_uri, experiment, parent)
    assert sorted(len(h) for h in histories[(0, "bcls")]) == [3, 3]
    assert rising_runs(histories) == {(0, "bcls"): (1, 2)}


def test_trained_histories_group_the_runs_a_study_trained_by_size_and_row():
    """The live summary's histories: what `run_histories` reads back, taken from the training stage."""
    from vse_ray.study.context import TrainedRun
    from vse_ray.study.summary import rising_runs
    from vse_ray.study.summary_stage import trained_histories

    def run(row, seed, last):
        history = [{"epoch": 1, "rsum": 20.0}, {"epoch": 2, "rsum": last}]
        return TrainedRun(row, seed, 0, f"{row}-{seed}", None, history)

    trained = {"bcls-s1": run("bcls", 1, 10.0), "bcls-s0": run("bcls", 0, 30.0)}
    trained["vsepp-s0"] = run("vsepp", 0, 5.0)
    histories = trained_histories(trained)
    assert [h[-1]["rsum"] for h in histories[(0, "bcls")]] == [30.0, 10.0]  # seed order
    assert rising_runs(histories) == {(0, "bcls"): (1, 2), (0, "vsepp"): (0, 1)}
