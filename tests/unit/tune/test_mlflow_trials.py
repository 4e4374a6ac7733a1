"""MLflowTrialsCallback against a real sqlite MLflow store, with stand-in Tune trials."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from mlflow import MlflowClient

from vse_ray.tracking.metric_keys import PATIENCE_STOP
from vse_ray.tune.mlflow_trials import PARENT_TAG, STOP_TAG, TRIAL_TAG, MLflowTrialsCallback


def _params(config: dict) -> dict:
    return {"epochs": 2, "lr": config["lr"], "loss.margin": 0.2}


def _trial(trial_id: str, lr: float) -> SimpleNamespace:
    return SimpleNamespace(trial_id=trial_id, config={"lr": lr}, last_result={})


def _report(callback: MLflowTrialsCallback, trial: SimpleNamespace, epoch: int) -> None:
    result = {"epoch": epoch, "rsum": 10.0 * epoch, "train_loss": 1.0 / epoch, "training_iteration": epoch}
    result |= {"time_this_iter_s": 0.5, "trial_id": trial.trial_id, "config": trial.config, "pid": 1}
    trial.last_result = result
    callback.on_trial_result(0, [], trial, result)


@pytest.fixture()
def store(shared_mlflow_uri, request):
    client = MlflowClient(shared_mlflow_uri)
    experiment_id = client.create_experiment(f"callback-{request.node.name}")
    parent = client.create_run(experiment_id, run_name="sweep").info.run_id
    return client, experiment_id, parent


def test_statuses_params_metrics_and_nesting(store, shared_mlflow_uri):
    client, experiment_id, parent = store
    callback = MLflowTrialsCallback(shared_mlflow_uri, experiment_id, parent, "sweep", _params)
    full, early, broken, running, patient = (
        _trial(t, lr) for t, lr in [("t0", 1e-4), ("t1", 2e-4), ("t2", 3e-4), ("t3", 4e-4), ("t4", 5e-4)]
    )
    for trial in (full, early, broken, running, patient):
        callback.on_trial_start(0, [], trial)
    for trial, epochs in ((full, 2), (early, 1), (broken, 1), (running, 1), (patient, 1)):
        for epoch in range(1, epochs + 1):
            _report(callback, trial, epoch)
    patient.last_result[PATIENCE_STOP] = 1.0  # its own patience ended it after epoch 1 of 2
    callback.on_trial_complete(0, [], full)
    callback.on_trial_complete(0, [], early)  # ASHA stopped it after epoch 1 of 2
    callback.on_trial_complete(0, [], patient)
    callback.on_trial_error(0, [], broken)
    callback.on_experiment_end([])

    expected = {"t0": ("FINISHED", "completed"), "t1": ("KILLED", "early_stopped")}
    expected |= {"t2": ("FAILED", "error"), "t3": ("KILLED", "interrupted"), "t4": ("FINISHED", "patience")}
    for trial_id, (status, reason) in expected.items():
        run = client.get_run(callback.runs[trial_id])
        assert (run.info.status, run.data.tags[STOP_TAG]) == (status, reason)
        assert run.data.tags[PARENT_TAG] == parent and run.data.tags[TRIAL_TAG] == trial_id
        assert run.info.run_name == f"sweep/{trial_id}"
    run = client.get_run(callback.runs["t0"])
    assert run.data.params == {"epochs": "2", "lr": "0.0001", "loss.margin": "0.2"}
    assert [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, "val/rsum")] == [
        (1, 10.0),
        (2, 20.0),
    ]
    assert set(run.data.metrics) == {"val/rsum", "train/loss"}  # no Tune bookkeeping


def test_resumed_trial_continues_its_run_without_duplicate_epochs(store, shared_mlflow_uri):
    client, experiment_id, parent = store
    first = MLflowTrialsCallback(shared_mlflow_uri, experiment_id, parent, "resume", _params)
    trial = _trial("r0", 1e-4)
    first.on_trial_start(0, [], trial)
    _report(first, trial, 1)
    first.on_experiment_end([])
    assert client.get_run(first.runs["r0"]).info.status == "KILLED"

    second = MLflowTrialsCallback(shared_mlflow_uri, experiment_id, parent, "resume", _params)
    second.on_trial_start(0, [], trial)
    assert second.runs["r0"] == first.runs["r0"]
    assert client.get_run(second.runs["r0"]).info.status == "RUNNING"
    _report(second, trial, 1)  # a resumed trial re-sends nothing new for epoch 1 ...
    _report(second, trial, 2)
    second.on_trial_complete(0, [], trial)
    history = client.get_metric_history(second.runs["r0"], "val/rsum")
    assert sorted(m.step for m in history) == [1, 2]
    assert client.get_run(second.runs["r0"]).info.status == "FINISHED"
