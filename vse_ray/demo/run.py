"""`vse-ray demo`: embedded dataset → precompute → train every loss family → evaluate on test → compare."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path

from mlflow import MlflowClient

from vse_ray.data.config import AUTO, PrecomputeConfig
from vse_ray.data.precompute import precompute
from vse_ray.data.store import load_manifest
from vse_ray.demo.settings import DemoSettings
from vse_ray.demo.table import chance_levels, claim_checks, comparison_table
from vse_ray.demo.tune_losses import train_losses_with_tune
from vse_ray.evaluation.evaluate import evaluate_run
from vse_ray.ray_session import ensure_ray
from vse_ray.tracking import (
    get_or_create_experiment,
    get_or_create_run,
    log_epoch_metrics,
    log_params_flat,
    resolve_tracking_uri,
    runs_table_url,
    ui_command,
)
from vse_ray.train.config import TrainConfig
from vse_ray.train.engine import WARMUP_LOSS, run_training
from vse_ray.train.reporter import LocalReporter
from vse_ray.train.trainer import fit
from vse_ray.tune.mlflow_trials import PARENT_TAG


@dataclass
class DemoResult:
    """Test metrics per loss, the MLflow run ids, and where to look at them."""

    test_metrics: dict[str, dict[str, float]] = field(default_factory=dict)
    run_ids: dict[str, str] = field(default_factory=dict)
    tracking_uri: str = ""
    experiment_id: str = ""
    parent_run_id: str = ""
    seconds: dict[str, float] = field(default_factory=dict)


def train_config(s: DemoSettings, data_dir: str, loss: str, tracking_uri: str) -> TrainConfig:
    """The TrainConfig of one loss of the demo (resolved)."""
    return TrainConfig(
        data_dir=data_dir,
        loss=loss,
        loss_params=dict(s.loss_params.get(loss, {})),
        epochs=s.epochs,
        warmup_epochs=s.warmup_epochs,
        batch_size=s.batch_size,
        lr=s.lr,
        lr_update=s.lr_update,
        word_dim=s.word_dim,
        embed_dim=s.embed_dim,
        finetune=s.finetune,
        cnn=s.cnn,
        cnn_weights=None,
        num_workers=1,
        cpus_per_worker=s.cpus_per_trial,
        seed=s.seed,
        output_dir=s.output_dir,
        tracking_uri=tracking_uri,
        experiment="synthetic-demo",
        run_name=f"demo-{loss}-s{s.seed}",
    ).resolved()


def precompute_config(s: DemoSettings) -> PrecomputeConfig:
    """The synthetic dataset; when fine-tuning, the unused stored features come from the cheap tiny CNN."""
    return PrecomputeConfig(
        dataset="synthetic",
        n_train=s.n_train,
        n_val=s.n_val,
        n_test=s.n_test,
        seed=s.seed,
        cnn="tiny" if s.finetune else AUTO,
    )


def shared_warmup(cfg: TrainConfig, experiment_id: str, parent_run_id: str) -> TrainConfig:
    """Train the warm-up epochs once in this process (they are the same for every loss: sum of hinges, same
    seed and batches) as a nested MLflow run; return `cfg` starting from its last checkpoint."""
    warm = dataclasses.replace(
        cfg, loss=WARMUP_LOSS, epochs=cfg.warmup_epochs, run_name=f"{cfg.run_name}-warmup"
    )
    folder = Path(cfg.output_dir) / "warmup"
    reporter = LocalReporter(folder)
    run_training(warm, reporter)
    run_id = get_or_create_run(experiment_id, f"demo-warmup-s{cfg.seed}", cfg.tracking_uri)
    log_params_flat(warm.to_flat_dict(), run_id, cfg.tracking_uri)
    log_epoch_metrics(reporter.history, run_id, cfg.tracking_uri)
    client = MlflowClient(cfg.tracking_uri)
    client.set_tag(run_id, PARENT_TAG, parent_run_id)
    client.set_terminated(run_id, status="FINISHED")
    return dataclasses.replace(cfg, init_checkpoint=str(reporter.checkpoints[-1]))


def run_demo(settings: DemoSettings | None = None) -> DemoResult:
    """Run the whole mission on the embedded dataset and print the comparison table."""
    s = (settings or DemoSettings()).validate()
    out = Path(s.output_dir).expanduser().resolve()
    uri = resolve_tracking_uri(None, out)
    result = DemoResult(tracking_uri=uri)
    start = time.perf_counter()
    ensure_ray(
        num_cpus=s.num_cpus,
        include_dashboard=False,
        object_store_memory=400 * 1024**2,
        log_to_driver=True,
    )
    data_dir = str(out / "data")
    precompute(precompute_config(s), data_dir)
    result.seconds["precompute"] = time.perf_counter() - start
    first = train_config(s, data_dir, s.losses[0], uri).validate()
    result.experiment_id = get_or_create_experiment(first.experiment, uri, out)
    name = f"demo-{s.trainer}-s{s.seed}"
    result.parent_run_id = get_or_create_run(result.experiment_id, name, uri)
    log_params_flat({f"demo.{k}": v for k, v in vars(s).items()}, result.parent_run_id, uri)
    tick = time.perf_counter()
    if s.warmup_epochs:
        first = shared_warmup(first, result.experiment_id, result.parent_run_id)
        result.seconds["warm-up (shared)"] = time.perf_counter() - tick
    tick = time.perf_counter()
    if s.trainer == "tune":
        trained = train_losses_with_tune(
            first,
            s.losses,
            name=name,
            parent_run_id=result.parent_run_id,
            experiment_id=result.experiment_id,
            loss_params=s.loss_params,
            concurrent=s.concurrent,
            cpus_per_trial=s.cpus_per_trial,
        )
        result.run_ids = {loss: trained[loss].run_id for loss in s.losses}
        result.seconds.update({f"train {loss}": trained[loss].seconds for loss in s.losses})
    else:
        for loss in s.losses:
            loss_tick = time.perf_counter()
            cfg = dataclasses.replace(
                train_config(s, data_dir, loss, uri), init_checkpoint=first.init_checkpoint
            )
            result.run_ids[loss] = fit(cfg).run_id
            MlflowClient(uri).set_tag(result.run_ids[loss], PARENT_TAG, result.parent_run_id)
            result.seconds[f"train {loss}"] = time.perf_counter() - loss_tick
    result.seconds["train (all)"] = time.perf_counter() - tick
    tick = time.perf_counter()
    for loss in s.losses:
        report = evaluate_run(result.run_ids[loss], split="test", tracking_uri=uri, output_dir=str(out))
        result.test_metrics[loss] = report.metrics
        print(f"[demo] {loss}: test rsum {report.metrics['rsum']:.1f}", flush=True)
    result.seconds["evaluate"] = time.perf_counter() - tick
    MlflowClient(uri).set_terminated(result.parent_run_id, status="FINISHED")
    result.seconds["total"] = time.perf_counter() - start
    rows = load_manifest(data_dir)["rows"]
    print(summary_text(result, rows["images"]["test"], rows["captions"]["test"]))
    return result


def summary_text(result: DemoResult, n_test_images: int, n_test_captions: int) -> str:
    """Comparison table, claim checks, timings and how to open the MLflow UI."""
    table = comparison_table(result.test_metrics, chance_levels(n_test_images, n_test_captions))
    lines = [
        f"\nTest: {n_test_images} images, {n_test_captions} captions (R@K in %, CS/NCS/mAP as fractions)",
        table,
        "\nGraded-relevance losses against VSE++ (test):",
        *claim_checks(result.test_metrics),
        "\nSeconds: " + ", ".join(f"{k} {v:.0f}" for k, v in result.seconds.items()),
        "\nMLflow: " + ui_command(result.tracking_uri),
        "then open " + runs_table_url(result.tracking_uri, result.experiment_id),
    ]
    return "\n".join(lines)
