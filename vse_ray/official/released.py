"""Checkpoints of the authors' released code converted into vse_ray checkpoints, one recipe per format.

Every released training script saves ``{'epoch', 'model': [one state dict per part], 'best_rsum', 'opt',
'Eiters'}``, ``opt`` being its ``argparse.Namespace``; VSE∞'s wraps each part in ``nn.DataParallel`` first, so
every name of its state dicts starts with ``module.``. A :class:`ReleasedFormat` names the parts, how their
parameter names read in vse_ray (:mod:`vse_ray.models.official_names`) and how ``opt`` gives the vse_ray
model's constructor keywords; :func:`read_released` does the rest alike for every format: it refuses, in
one line naming the file, another format, a truncated file, options without a vse_ray counterpart and
tensors whose names or shapes do not fit.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from vse_ray.data.store.readers import vocab_mismatch
from vse_ray.data.store.shards import sha256_file
from vse_ray.models import RetrievalModel, build_model
from vse_ray.models.official_names import OfficialNames
from vse_ray.official.torch_file import load_torch_file

DATA_PARALLEL = "module."  # what nn.DataParallel puts before every name of the module it wraps
# Released training options kept in the imported run's TrainConfig (released name, vse_ray name).
TRAINING_OPTIONS = (
    ("num_epochs", "epochs"),
    ("batch_size", "batch_size"),
    ("learning_rate", "lr"),
    ("lr_update", "lr_update"),
    ("grad_clip", "grad_clip"),
)


class Options:
    """The released ``opt`` of checkpoint `path`, read with one-line errors naming the file and format."""

    def __init__(self, path: Path, opt: argparse.Namespace, fmt: str, flags: dict[str, Any]):
        self.path, self.opt, self.fmt, self.flags = path, opt, fmt, flags

    def error(self, message: str) -> ValueError:
        return ValueError(f"checkpoint {self.path}: {message}")

    def get(self, name: str, default: Any = ...) -> Any:
        """``opt.<name>``; without a `default`, a missing option is an error."""
        if hasattr(self.opt, name):
            return getattr(self.opt, name)
        if default is ...:
            raise self.error(f"'opt' lacks {name!r} (expected the options of {self.fmt})")
        return default

    def one_of(self, name: str, allowed: Collection[Any], default: Any = ...) -> Any:
        """``opt.<name>``, refused unless in `allowed` (the values vse_ray has a counterpart for)."""
        value = self.get(name, default)
        if value not in allowed:
            shown = " or ".join(repr(v) for v in allowed)
            raise self.error(f"expected opt.{name} {shown}, found {value!r} (no vse_ray counterpart)")
        return value

    def normalised(self, *flags: str) -> None:
        """Refuse a checkpoint trained without the L2 normalisation vse_ray's model applies."""
        for flag in flags:
            self.one_of(flag, (False,), False)

    def rows(self, part: dict[str, Any], name: str = "embed.weight") -> int:
        """Rows of the word-embedding matrix ``txt_enc.<name>``, checked against ``opt.vocab_size``."""
        embed = part.get(name)
        if not isinstance(embed, torch.Tensor) or embed.dim() != 2:
            found = tuple(embed.shape) if isinstance(embed, torch.Tensor) else type(embed).__name__
            raise self.error(f"expected txt_enc {name!r} (vocab, word_dim), found {found}")
        stated = self.get("vocab_size", None)
        if stated is not None and stated != embed.shape[0]:
            raise self.error(
                f"expected txt_enc {name!r} of {stated} rows (opt.vocab_size), found {embed.shape[0]}"
            )
        return int(embed.shape[0])


@dataclass(frozen=True)
class ReleasedFormat:
    """One released code's checkpoint layout and its vse_ray model.

    Attributes:
        name: The ``--format`` value.
        expected: What a file of this format holds, as error messages state it.
        model: The vse_ray model name.
        parts: Names of the state dicts in ``'model'``, in order.
        names: How the released parameter names read in vse_ray.
        model_args: ``(opt, parts)`` → the vse_ray model's constructor keywords.
        mask_row: The word embedding may hold one row more than the vocabulary file (VSE∞'s ``<mask>``).
        reads_vocab: The model reads the data folder's vocabulary ids (not BERT wordpieces).
        not_saved: Prefixes of vse_ray keys the released file never holds (VSRN's caption decoder, which
            only trains): they keep the built model's initial values.
        conv1x1: The released model holds kernel-1 ``Conv1d`` weights (out, in, 1) where vse_ray has
            ``Linear`` ones (out, in) (VSRN's reasoning layers).
        derived: ``(opt, parts, model args, data folder)`` → vse_ray tensors the released file holds under
            no name of its own, computed from it, the flags and the data folder (CVSE's normalised concept
            graph, its concepts' input vectors and the token → concept index).
        layout: ``(path, loaded object)`` → parts and options, for a file that is not the common
            ``{'model': [...], 'opt': Namespace}`` (the ladder code saves a list: one state dict, no options).
    """

    name: str
    expected: str
    model: str
    parts: tuple[str, ...]
    names: OfficialNames
    model_args: Callable[[Options, dict[str, dict]], dict[str, Any]]
    mask_row: bool = False
    reads_vocab: bool = True
    not_saved: tuple[str, ...] = ()
    conv1x1: bool = False
    derived: Callable[[Options, dict[str, dict], dict[str, Any], str], dict[str, torch.Tensor]] | None = None
    layout: Callable[[Path, Any], tuple[dict[str, dict], argparse.Namespace]] | None = None


@dataclass(frozen=True)
class ReleasedModel:
    """A released checkpoint read as a vse_ray model: what `vse_ray.train.imported.import_released` saves."""

    model: RetrievalModel
    args: dict[str, Any]  # the model's constructor keywords
    training: dict[str, Any]  # TrainConfig fields the released options give (`TRAINING_OPTIONS`)
    epoch: int
    imported_from: dict[str, str]  # format, file name and its sha256


def read_released(fmt: ReleasedFormat, path: str | Path, data_dir: str = "", **flags: Any) -> ReleasedModel:
    """The released checkpoint `path` of format `fmt` as a vse_ray model with its weights.

    Args:
        fmt: The released format.
        path: The released checkpoint (``model_best.pth.tar``, ``checkpoint.pth`` ...).
        data_dir: Precompute folder the model will read; its vocabulary must have as many words as the
            checkpoint's word embedding has rows ("": not checked).
        flags: Settings the released file does not hold (``bert_path``, ``graph_path``; CVSE's
            ``concepts``, ``concept_vectors``, ``wordnet``).

    Raises:
        ValueError: one line naming the file and what was expected and found.
    """
    path = Path(path)
    raw = load_torch_file(path)
    parts, opt = fmt.layout(path, raw) if fmt.layout else _parts(fmt, path, raw)
    options = Options(path, opt, fmt.name, flags)
    args = fmt.model_args(options, parts)
    problem = data_dir and fmt.reads_vocab and vocab_mismatch(args["vocab_size"], data_dir, fmt.mask_row)
    if problem:
        raise options.error(problem)
    derived = fmt.derived(options, parts, args, data_dir) if fmt.derived else {}
    model = build_model(fmt.model, **args)
    model.load_state_dict(_renamed(fmt, path, parts, model.state_dict(), args, derived))
    training = {ours: getattr(opt, theirs) for theirs, ours in TRAINING_OPTIONS if hasattr(opt, theirs)}
    source = {"format": fmt.name, "file": path.name, "sha256": sha256_file(path)}
    epoch = int(raw.get("epoch", 0)) if isinstance(raw, dict) else 0
    return ReleasedModel(model, args, training, epoch, source)


def _parts(fmt: ReleasedFormat, path: Path, raw: Any) -> tuple[dict[str, dict], argparse.Namespace]:
    """{part name: state dict} and opt of the released layout; ValueError naming what was found."""
    expected = f"expected {fmt.expected}"
    if not isinstance(raw, dict):
        raise ValueError(f"checkpoint {path}: {expected}, found a {type(raw).__name__}")
    if "format" in raw:
        raise ValueError(f"checkpoint {path}: {expected}, found a vse_ray checkpoint ({raw['format']})")
    model, opt = raw.get("model"), raw.get("opt")
    if not isinstance(model, list | tuple) or not isinstance(opt, argparse.Namespace):
        found = {k: type(v).__name__ for k, v in raw.items()}
        raise ValueError(f"checkpoint {path}: {expected}, found keys {found}")
    if len(model) != len(fmt.parts) or not all(isinstance(s, dict) for s in model):
        kinds = [type(s).__name__ for s in model]
        hint = {2: " (VSE++, VSE∞ or SCAN?)", 3: " (SGRAF?)", 4: " (GSMN?)", 8: " (CVSE?)"}.get(
            len(model), ""
        )
        raise ValueError(f"checkpoint {path}: {expected}, found 'model' = {kinds}{hint}")
    return {part: without_data_parallel(state) for part, state in zip(fmt.parts, model, strict=True)}, opt


def without_data_parallel(state: dict[str, Any]) -> dict[str, Any]:
    """The state dict of a part saved inside ``nn.DataParallel`` under the part's own names (the leading
    ``module.`` of every name removed); a state dict saved unwrapped as it is."""
    if state and all(isinstance(k, str) and k.startswith(DATA_PARALLEL) for k in state):
        return {k.removeprefix(DATA_PARALLEL): v for k, v in state.items()}
    return state


def _renamed(
    fmt: ReleasedFormat,
    path: Path,
    parts: dict[str, dict],
    expected: dict[str, torch.Tensor],
    args: dict[str, Any],
    derived: dict[str, torch.Tensor],
) -> dict[str, torch.Tensor]:
    """The released tensors under vse_ray names, with the `derived` ones; ValueError naming the first that
    is missing, unexpected or of another shape than the options give."""
    state = dict(derived)
    for part, tensors in parts.items():
        for name, value in tensors.items():
            key = fmt.names.ours(f"{part}.{name}")
            if key is None:
                continue
            if key not in expected:
                raise ValueError(f"checkpoint {path}: {part} holds {name!r}, which {fmt.name} does not have")
            if fmt.conv1x1 and isinstance(value, torch.Tensor) and value.shape[:-1] == expected[key].shape:
                value = value.squeeze(-1)  # a kernel-1 Conv1d weight (out, in, 1) as a Linear's (out, in)
            if not isinstance(value, torch.Tensor) or value.shape != expected[key].shape:
                found = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
                sizes = ", ".join(f"{k}={v}" for k, v in args.items() if isinstance(v, int | float | str))
                raise ValueError(
                    f"checkpoint {path}: {part} {name!r}: expected shape {tuple(expected[key].shape)} "
                    f"(from opt: {sizes}), found {found}"
                )
            state[key] = value.to(expected[key].dtype)
    for key in expected:
        if key.startswith(fmt.not_saved) and fmt.not_saved:
            state[key] = expected[key]
    lacking = [k for k in expected if k not in state]
    if lacking:
        part, name = fmt.names.official(lacking[0]).split(".", 1)
        raise ValueError(f"checkpoint {path}: expected {part} {name!r} ({fmt.name}), found none")
    return state
