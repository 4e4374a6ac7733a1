"""The plain-PyTorch epoch loop (Ray-free): train one epoch, validate, checkpoint, report."""

from __future__ import annotations

import dataclasses
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

from vse_ray.checkpoint_files import load_checkpoint, save_checkpoint
from vse_ray.evaluation.embed import evaluate_split
from vse_ray.losses import make_loss
from vse_ray.losses.base import BaseVSELoss
from vse_ray.losses.contrastive import InfoNCELoss
from vse_ray.metrics.registry import CUTOFFS
from vse_ray.models import build_model
from vse_ray.models.base import with_mask_row
from vse_ray.models.image_encoder import projection_for_the_cnn
from vse_ray.models.training_output import split_output
from vse_ray.relevance.histogram import RelevanceHistogram
from vse_ray.tracking import metric_keys
from vse_ray.train.batches import BatchBuilder, BatchSource, TableBatches, TrainBatch
from vse_ray.train.caption_aug import CaptionAugment
from vse_ray.train.config import CheckedConfig, TrainConfig, fields_where
from vse_ray.train.gather import (
    gather_rows,
    gather_with_grad,
    gather_with_local_grad,
    relevance_columns,
    share_loss_gradients,
)
from vse_ray.train.image_crop import random_resized_crops
from vse_ray.train.optim import build_optimizer, freeze_image, load_optimizer_state, milestones, per_step
from vse_ray.train.precision import FP32, Precision
from vse_ray.train.reporter import Reporter
from vse_ray.train.step_validation import StepValidation
from vse_ray.train.streams import caption_rng, crop_generator, region_rng, seed_step_torch
from vse_ray.train.training_data import TrainingData

# Fields a shared warm-up checkpoint must agree on with the run that starts from it (`init_checkpoint`).
WARMUP_SHARED_FIELDS = fields_where(warmup=True)
_DEFAULTS = TrainConfig().to_dict()  # a checkpoint's config without a field (older): trained at its default


COLLAPSE_SHARE = 0.98  # an epoch's mean loss at 98 % of the collapse value or more: it has not left collapse


class NonFiniteLossError(FloatingPointError):
    """The loss became NaN or infinite; the message names the epoch, step and value."""


@dataclass
class WorkerContext:
    """Where this process sits: its training batches, device, rank and world size.

    `batches` None: this worker's part of a seeded global permutation of the train captions per epoch
    (`TableBatches`), so the global batches are the same for any number of workers."""

    batches: BatchSource | None
    device: torch.device
    rank: int = 0
    world_size: int = 1


def local_context(cfg: TrainConfig) -> WorkerContext:
    """Single process on CPU or the first GPU."""
    return WorkerContext(None, torch.device("cuda" if cfg.use_gpu and torch.cuda.is_available() else "cpu"))


def train_step(
    model: nn.Module,
    loss_fn: BaseVSELoss,
    optimizer: torch.optim.Optimizer,
    batch: TrainBatch,
    grad_clip: float,
    rank: int = 0,
    world_size: int = 1,
    precision: Precision = FP32,
    local: bool = False,
) -> torch.Tensor:
    """One SGD step: the model's (B, B) similarities, their loss, backward, clip the gradient norm, update.

    A model whose forward returns a `TrainingOutput` adds its own loss terms to the run's loss; the returned
    value is that whole objective.

    With `world_size` > 1 (embedding models: see `gathers`) the similarities and the loss span the global
    batch (`vse_ray.train.gather`) and the loss is scaled by `world_size` for backward, so DDP's averaged
    gradient is the one-process gradient of that batch. The loss's own learned parameters (a logit scale)
    get that gradient too (`share_loss_gradients`), are clipped with the model's, and are kept in range after
    the update (`after_step`), as open_clip clamps its logit scale. The forward and the loss run in the
    autocast of `precision` (bf16, or fp16 with its gradient scaler).

    `local` (`loss_span: local`, with `world_size` > 1): the model gives this worker's (2, B, W·B) rows of
    both directions, gathered with their gradient, and the loss is that of its rows (open_clip's
    ``local_loss``), backpropagated unscaled.
    """
    options: dict[str, Any] = {} if batch.region_keep is None else {"region_keep": batch.region_keep}
    local = local and world_size > 1
    if local:
        options["local_gather"] = partial(gather_with_grad, rank=rank, world_size=world_size)
    elif world_size > 1:
        options["gather"] = partial(gather_with_local_grad, rank=rank, world_size=world_size)
    images = batch.images.float() if batch.images.dtype == torch.float16 else batch.images  # as stored
    with precision.autocast():
        output = split_output(model(images, batch.tokens, batch.lengths, **options))
        if local:
            if not isinstance(loss_fn, InfoNCELoss):
                raise ValueError(
                    f"loss_span local: only infonce has a local loss, not {type(loss_fn).__name__}"
                )
            offset = rank * output.sims.shape[1]
            run_loss = loss_fn.from_local_similarity(output.sims, offset, batch.relevance, batch.image_ids)
        else:
            run_loss = loss_fn.from_similarity(
                output.sims, relevance=batch.relevance, image_ids=batch.image_ids
            )
        loss = output.total(run_loss)
    optimizer.zero_grad(set_to_none=True)
    if not torch.isfinite(loss):
        return loss.detach()
    scale = 1 if local else world_size  # workers whose pairs one loss's gradient spans
    precision.backward(output.objective(run_loss, scale))
    share_loss_gradients(loss_fn.parameters(), scale)
    precision.unscale(optimizer)
    nn.utils.clip_grad_norm_([*clipped_parameters(model), *loss_fn.parameters()], grad_clip)
    precision.step(optimizer)
    loss_fn.after_step()
    return loss.detach()


def clipped_parameters(model: nn.Module) -> list[nn.Parameter]:
    """The parameters whose gradient norm a step clips: all but those the model leaves out (`unclipped`)."""
    inner = model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model
    skip = getattr(inner, "unclipped", ())
    return [p for name, p in inner.named_parameters() if not (skip and name.startswith(skip))]


def _gathered(model: nn.Module, ctx: WorkerContext, span: str) -> int:
    """Workers whose pairs one loss spans (the global batch of embedding models under DDP, unless
    `loss_span` is "worker")."""
    return ctx.world_size if gathers(model) and span != "worker" else 1


def gathers(model: nn.Module) -> bool:
    """Whether the loss spans the global batch under DDP: embedding models all-gather their embeddings;
    similarity models (SCAN, SGRAF) score each worker's local B x B pairs, as their papers train."""
    inner = model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model
    return inner.kind == "embedding"


def train_one_epoch(
    cfg: TrainConfig,
    epoch: int,
    model: nn.Module,
    loss_fn: BaseVSELoss,
    optimizer: torch.optim.Optimizer,
    builder: BatchBuilder,
    ctx: WorkerContext,
    histogram: RelevanceHistogram | None,
    augment: CaptionAugment | None = None,
    after_step: Callable[[int, nn.Module], None] | None = None,
    precision: Precision = FP32,
) -> float:
    """Run one epoch; return the mean loss over all workers. Raises NonFiniteLossError on NaN/inf.

    Its draws come from the epoch's streams of this worker (`vse_ray.train.streams`)."""
    model.train()
    builder_columns = relevance_columns(builder.source)
    world_size = _gathered(model, ctx, cfg.loss_span)  # 1: each worker's local B x B loss, DDP averages
    local = cfg.loss_span == "local"
    total, steps = torch.zeros((), dtype=torch.float64), 0
    seed_step_torch(cfg.seed, ctx.rank, epoch)
    regions = region_rng(cfg.seed, ctx.rank, epoch)
    draw = partial(augment, rng=caption_rng(cfg.seed, ctx.rank, epoch)) if augment is not None else None
    crop = None
    if cfg.image_crop_scale:
        low, high = cfg.image_crop_scale
        generator = crop_generator(cfg.seed, ctx.rank, epoch)
        crop = partial(random_resized_crops, scale=(low, high), generator=generator)
    if ctx.batches is None:
        raise ValueError("train_one_epoch: the worker context has no batches")
    host = partial(host_batch, builder, draw=draw, regions=regions, device=ctx.device, crop=crop)
    everyone = (
        partial(gather_rows, columns=builder_columns, world_size=world_size) if world_size > 1 else None
    )
    for step, batch in enumerate(prefetched(ctx.batches.epoch_batches(epoch), host, everyone), start=1):
        batch = batch.to(ctx.device, non_blocking=True)
        if cfg.negatives == "diagonal":  # other captions of the same image stay negatives
            batch.image_ids = None
        if histogram is not None and batch.relevance is not None:
            histogram.add(batch.relevance)
        loss = train_step(
            model, loss_fn, optimizer, batch, cfg.grad_clip, ctx.rank, world_size, precision, local
        )
        if not torch.isfinite(loss):
            raise NonFiniteLossError(
                f"loss is {loss.item()} at epoch {epoch}, step {step} (loss '{cfg.loss}')"
            )
        total += loss.double().cpu()
        steps += 1
        if after_step is not None:
            after_step(
                step, model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model
            )
    summed = torch.stack([total, torch.tensor(float(steps), dtype=torch.float64)])
    if ctx.world_size > 1:
        dist.all_reduce(summed)
    if summed[1] == 0:
        raise ValueError(f"batch_size {cfg.batch_size}: no full batch in epoch {epoch}")
    return float(summed[0] / summed[1])


def host_batch(
    builder: BatchBuilder,
    rows: dict[str, Any],
    everyone: dict[str, Any] | None,
    draw: Callable[..., Any] | None,
    regions: np.random.Generator | None,
    device: torch.device,
    crop: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> TrainBatch:
    """A batch built on the host, its stored images cropped by `crop` (training), pinned when it goes to
    a GPU, where its relevance is then built."""
    batch = builder(rows, everyone, draw, regions, relevance_on_device=device.type == "cuda")
    if crop is not None:
        batch.images = crop(batch.images)
    return batch.pin_memory() if device.type == "cuda" else batch


def prefetched(
    batches: Iterable[dict[str, Any]],
    build: Callable[[dict[str, Any], dict[str, Any] | None], TrainBatch],
    gather: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> Iterator[TrainBatch]:
    """The batches built one ahead on a background thread, so that reading, collating and pinning batch
    k + 1 overlaps step k. One thread builds them in order, so each stream's draws are those of building
    them in line. `gather` (global-batch rows under DDP) is a collective and stays on this thread, run for
    batch k + 1 before step k on every worker alike."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="batch") as pool:
        pending: Future[TrainBatch] | None = None
        for rows in batches:
            ahead = pool.submit(build, rows, gather(rows) if gather is not None else None)
            if pending is not None:
                yield pending.result()
            pending = ahead
        if pending is not None:
            yield pending.result()


def warmup_state(cfg: TrainConfig) -> dict[str, Any]:
    """The state of `cfg.init_checkpoint`, checked to be a warm-up this run would have trained itself."""
    state = load_checkpoint(cfg.init_checkpoint)
    theirs, ours = state["config"], cfg.to_dict()
    differ = [k for k in WARMUP_SHARED_FIELDS if _shared(theirs, k) != _shared(ours, k)]
    if differ:
        raise ValueError(f"init_checkpoint {cfg.init_checkpoint}: trained with other {differ}")
    if int(state["epoch"]) > cfg.warmup_epochs:
        raise ValueError(
            f"init_checkpoint {cfg.init_checkpoint}: epoch {state['epoch']} is past warmup_epochs "
            f"{cfg.warmup_epochs}, so it was not trained with the warm-up loss only"
        )
    return state


def _shared(config: dict[str, Any], key: str) -> Any:
    """A config's value of the warm-up field ``key`` (its default when the config predates it);
    ``num_workers`` as the processes it trains on: 0 (this process) and none (a trial's process) train as
    one worker, the same numbers."""
    value = config.get(key, _DEFAULTS[key])
    return max(1, value or 0) if key == "num_workers" else value


def load_start_weights(model: nn.Module, weights: dict[str, Any]) -> None:
    """Load a resumed run's (or its warm-up's) model weights; one line where they do not fit this model."""
    try:
        model.load_state_dict(weights)
    except RuntimeError as err:
        detail = next((ln.strip() for ln in str(err).splitlines()[1:] if ln.strip()), str(err))
        raise ValueError(
            f"the checkpoint this run starts from does not fit the model ({detail[:200]}): it was made by "
            "another version of vse_ray; pass --new-run to start a fresh run beside it"
        ) from err


def load_init_weights(model: nn.Module, path: str) -> None:
    """Load the model weights of checkpoint `path` (`init_weights`: another run, any training settings) into
    `model`; nothing else of that run (optimiser, schedule, epoch, history) is taken. A run on precomputed
    features starts a model with the CNN in the loop: its projection, the CNN keeping its own weights. A
    checkpoint whose embedding lacks the `<mask>` row this model always holds (`mask_row`: a VSE∞ run made
    before it did) starts that row as this model drew it.

    Raises:
        ValueError: one line naming the checkpoint and the first weight that this model lacks, that the
            checkpoint lacks, or whose shape differs (a checkpoint of another model or other dimensions).
    """
    name = f"init_weights {path}"
    state = load_checkpoint(path, name=name)
    ours = model.state_dict()
    theirs = projection_for_the_cnn(state["model"], ours)
    theirs = with_mask_row(theirs, ours, getattr(model, "mask_row", None))
    other = f"a {state['model_name']!r} model's checkpoint"
    for key in sorted(ours.keys() | theirs.keys()):
        if key not in theirs:
            raise ValueError(f"{name}: has no weight {key!r}, which this run's model has ({other})")
        if key not in ours:
            raise ValueError(f"{name}: holds {key!r}, which this run's model has not ({other})")
        if tuple(theirs[key].shape) != tuple(ours[key].shape):
            raise ValueError(
                f"{name}: {key!r} has shape {list(theirs[key].shape)} there and {list(ours[key].shape)} in "
                f"this run's model ({other}; other dimensions)"
            )
    model.load_state_dict(theirs)


def run_training(
    valid: CheckedConfig,
    reporter: Reporter,
    start_state: dict[str, Any] | None = None,
    context: WorkerContext | None = None,
) -> None:
    """Train `cfg.loss` for `cfg.epochs` (the first `cfg.warmup_epochs` with `cfg.warmup_loss`), validating
    and checkpointing after every epoch.

    Args:
        valid: The run's configuration, checked where it was made (`TrainConfig.checked()`) and trusted.
        reporter: Receives `(metrics, checkpoint_dir)` once per epoch (checkpoint on rank 0 only).
        start_state: A loaded checkpoint (see `load_checkpoint`) to resume from, or None.
        context: Batches/device/rank of this worker; default: single process over the local train split.
    """
    cfg = valid.config
    resumed = start_state is not None  # this run's own checkpoint, not a shared warm-up's
    if start_state is None and cfg.init_checkpoint:
        start_state = warmup_state(cfg)
    torch.manual_seed(cfg.seed)
    loss_fn = make_loss(cfg.loss, **cfg.loss_params)
    source = loss_fn.relevance_source
    ctx = context or local_context(cfg)
    data = TrainingData.load(cfg, source, with_captions=ctx.batches is None)
    if ctx.batches is None:
        batches = TableBatches(data.train_captions, cfg.batch_size, cfg.seed, ctx.rank, ctx.world_size)
        ctx = dataclasses.replace(ctx, batches=batches)
    model = build_model(cfg.model, **data.model_args, **data.model_inputs).to(ctx.device)
    loss_fn = loss_fn.to(ctx.device)
    warmup_fn = make_loss(cfg.warmup_loss, **cfg.warmup_params).to(ctx.device)
    if start_state is None and cfg.init_weights:  # a resumed or warm-up start holds these weights already
        load_init_weights(model, cfg.init_weights)
    loss_fn.start_from(getattr(model, "learned_logits", {}))  # a CLIP checkpoint's logit scale (and bias)
    if cfg.grad_checkpointing:
        model.set_grad_checkpointing()
    steps_per_epoch = ctx.batches.steps_per_epoch if isinstance(ctx.batches, TableBatches) else 1
    optimizer, scheduler = build_optimizer(cfg, model, loss_fn, steps_per_epoch)
    precision = Precision(cfg.precision, ctx.device)
    histogram = RelevanceHistogram(source) if source and ctx.rank == 0 else None
    history: list[dict[str, Any]] = []
    first_epoch = 1
    if start_state is not None:
        load_start_weights(model, start_state["model"])
        if resumed and start_state.get("loss"):
            loss_fn.load_state_dict(start_state["loss"])
        load_optimizer_state(optimizer, start_state["optimizer"])
        scheduler.load_state_dict(start_state["scheduler"])
        if isinstance(scheduler, torch.optim.lr_scheduler.MultiStepLR):  # this run's, not its warm-up's
            scheduler.milestones = Counter(milestones(cfg))
        history = list(start_state["history"])
        first_epoch = int(start_state["epoch"]) + 1
        if histogram is not None and start_state.get("relevance_hist"):
            histogram = RelevanceHistogram.from_dict(start_state["relevance_hist"])
    builder = BatchBuilder(data.train_images, source, data.references, model.caption_ids, model.region_drop)
    augment = data.caption_augment
    if augment is not None and model.caption_space is not None:  # the model's own ids (BERT wordpieces)
        augment = augment.in_space(model.caption_space)
    net = model
    if ctx.world_size > 1:
        net = nn.parallel.DistributedDataParallel(model, find_unused_parameters=model.find_unused_parameters)

    def validate() -> dict[str, Any]:
        return evaluate_split(model, data.val, cfg.eval_batch_size, ctx.device, _metric_kwargs(cfg))

    points = StepValidation(cfg.val_every if ctx.rank == 0 else 0, validate)

    def after_step(step: int, inner: nn.Module) -> None:
        if per_step(cfg):
            scheduler.step()
        points.after_step(step, inner)

    for epoch in range(first_epoch, cfg.epochs + 1):
        epoch_loss = warmup_fn if epoch <= cfg.warmup_epochs else loss_fn
        if cfg.freeze_image_epochs:
            freeze_image(optimizer, epoch <= cfg.freeze_image_epochs)
        train_loss = train_one_epoch(
            cfg,
            epoch,
            net,
            epoch_loss,
            optimizer,
            builder,
            ctx,
            histogram,
            augment,
            after_step,
            precision,
        )
        group = optimizer.param_groups[-1]
        lr = cfg.lr * group["lr"] / group["initial_lr"]  # the base rate, whatever the groups' multipliers
        if not per_step(cfg):
            scheduler.step()
        metrics: dict[str, Any] = {"epoch": epoch, "train_loss": train_loss, "lr": lr}
        metrics.update(loss_fn.learned_values())  # the logit scale (and bias) of infonce and siglip
        collapse = getattr(epoch_loss, "collapse_value", lambda _: None)(
            cfg.batch_size * _gathered(net, ctx, cfg.loss_span)
        )
        if collapse is not None:
            metrics["collapsed"] = float(train_loss >= COLLAPSE_SHARE * collapse)
        if ctx.rank != 0:
            reporter.report(metrics, None)
            if cfg.patience and _everyone_stops(False, ctx):
                break
            continue
        selected, selected_weights = points.select(validate())
        metrics.update(selected)
        history.append(metrics)
        # never inside the warm-up; rank 0 decides for every worker (`_everyone_stops`)
        stalled = (
            cfg.patience > 0 and epoch > cfg.warmup_epochs and epochs_without_gain(history) >= cfg.patience
        )
        if stalled:
            metrics[metric_keys.PATIENCE_STOP] = 1.0
        state = {
            "epoch": epoch,
            "model": model.state_dict(),
            "loss": loss_fn.state_dict(),  # its learned logit scale and bias, if any
            "selected_model": selected_weights,
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "config": cfg.to_dict(),
            "model_name": cfg.model,
            "model_args": data.model_args,
            "history": history,
            "relevance_hist": histogram.to_dict() if histogram is not None else {},
        }
        with tempfile.TemporaryDirectory(prefix="vse_ray_ckpt_") as tmp:
            save_checkpoint(tmp, state)
            reporter.report(metrics, tmp)
        if cfg.patience and _everyone_stops(stalled, ctx):
            break


def epochs_without_gain(history: list[dict[str, Any]]) -> int:
    """Epochs since the best validation rsum of `history` (0: the last epoch is the best)."""
    best = max(range(len(history)), key=lambda i: (history[i]["rsum"], -i))
    return len(history) - 1 - best


def _everyone_stops(stop: bool, ctx: WorkerContext) -> bool:
    """Rank 0's early-stopping decision, shared with every worker."""
    if ctx.world_size == 1:
        return stop
    flag = torch.tensor([float(stop)], device=ctx.device)
    dist.broadcast(flag, src=0)
    return bool(flag.item())


def _metric_kwargs(cfg: TrainConfig) -> dict[str, Any]:
    """The run's cut-offs, by the fields the metrics declare."""
    return {field: getattr(cfg, field) for field in CUTOFFS}
