"""Run the authors' released code on a modern Python, PyTorch and NumPy, changed at run time only.

`benchmarks/step_vs_official.py`, `benchmarks/bench_vs_official.py`, `official_starts.py` and
`official_lineage.py` import the authors' modules from their checkouts through these helpers; nothing of the
authors' code is copied into this project. Three kinds of change, none of which touches the arithmetic of a
training step:

- `stub_modules`: empty modules for what the code imports but never calls here (`tensorboard_logger`, `cv2`,
  `imageio`, `torchtext`, ...); their functions do nothing;
- `no_cuda`: `Tensor.cuda` and `torch.cuda.synchronize` do nothing, for code that moves to the GPU whether or
  not it sees one;
- `patched_checkout`: a temporary copy of a checkout's Python files in which the Python 2 idioms that Python 3
  reads otherwise are replaced by their Python 3 spelling (`EDITS`: integer division, bytes captions,
  `iteritems`, `loss.data[0]` of a 0-dim loss, NumPy's removed `np.int`, ...), and GSMN's loader reads its
  object array of image sizes with pickle allowed (NumPy's default since 1.16.3) and any number of regions
  (it asserts 36). Each edit must match the file, so a checkout at another commit fails in one line instead
  of running other code.

`parsed_options` reads a script's options from its own parser, which the VSE++ lineage builds inside `main`.
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import shutil
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

import torch

Edits = dict[str, list[tuple[str, str]]]  # file in the checkout -> (text, its replacement), in order
# fartashf/vsepp's data.py imports the COCO API for its raw-image loaders, unused for precomputed features
COCO_API = ("pycocotools", "pycocotools.coco")
# VSRN's model.py imports its CIDER-D scorer (for the self-critical reward, unused in its training)
CIDER = ("pyciderevalcap", "pyciderevalcap.ciderD", "pyciderevalcap.ciderD.ciderD")

_DATA_PY2 = [  # the precomp loaders of the VSE++ lineage (VSE++, SCAN, SGRAF, VSRN)
    ("img_id = index/self.im_div", "img_id = index//self.im_div"),
    ("str(caption).lower().decode('utf-8')", "caption.lower().decode('utf-8')"),
]
_ITERITEMS = [(".iteritems()", ".items()")]
_HALF_WIDTH = [("size(2)/2", "size(2)//2")]  # averaging the Bi-GRU's two directions

EDITS: dict[str, Edits] = {
    "vsepp": {
        "data.py": _DATA_PY2,
        "model.py": [("loss.data[0]", "loss.item()")],
        "evaluation.py": [*_ITERITEMS, ("npts = images.shape[0] / 5", "npts = images.shape[0] // 5")],
    },
    "scan": {
        "data.py": _DATA_PY2,
        "model.py": [*_HALF_WIDTH, ("loss.data[0]", "loss.item()")],
        "evaluation.py": [*_ITERITEMS, (")/shard_size", ")//shard_size")],
    },
    "sgraf": {
        "data.py": _DATA_PY2,
        # the loss moves its diagonal mask with `.cuda()` and skips the line (and fails) without a GPU
        "model.py": [
            *_HALF_WIDTH,
            (
                "if torch.cuda.is_available():\n            I = mask.cuda()",
                "if True:\n            I = mask.cuda()",
            ),
        ],
        "evaluation.py": _ITERITEMS,
    },
    "vsrn": {
        "data.py": [
            *_DATA_PY2,
            ("str(line.strip()).lower().decode('utf-8')", "line.strip().lower().decode('utf-8')"),
        ],
        "model.py": [
            (".data[0]", ".data.item()"),
            # modern PyTorch keeps the permuted layout, which EncoderRNN's `.view` refuses (same values)
            ("GCN_img_emd = l2norm(GCN_img_emd)", "GCN_img_emd = l2norm(GCN_img_emd).contiguous()"),
            ("bidirectional=opt.bidirectional", "bidirectional=bool(opt.bidirectional)"),  # nn.GRU: no int
        ],
        "evaluation.py": [*_ITERITEMS, ("npts = images.shape[0] / 5", "npts = images.shape[0] // 5")],
    },
    "gsmn": {
        "data.py": [
            ("img_id = index / self.im_div", "img_id = index // self.im_div"),
            ("caption.split(',')", "caption.split(b',')"),
            ("caps = map(int, caps)", "caps = list(map(int, caps))"),
            # NumPy reads the released object array of image sizes only with pickle allowed (since 1.16.3)
            ("'%s_ims_size.npy' % data_split)", "'%s_ims_size.npy' % data_split, allow_pickle=True)"),
            # the released loader takes 36 regions an image only; the parity runs read fewer, each boxed
            ("assert k == 36", "assert k == len(bboxes)"),
        ],
        "model.py": [("size(2) / 2", "size(2) // 2")],  # averaging the Bi-GRU's two directions
        "graph_model.py": [("dtype=np.int)", "dtype=int)")],
        "evaluation.py": [*_ITERITEMS, (") / shard_size", ") // shard_size")],
    },
    "cvse": {
        "util/util_C_GCN.py": [("np.identity(num_classes, np.int)", "np.identity(num_classes, int)")],
        # `str(caption)` of the caption's bytes reads "b'...'" on Python 3 (on Python 2, which the idiom is
        # written for, the caption itself): the GRU would read `b'word` and a trailing quote as unknown words
        # and the test labels miss them; decoded, both read the caption's words
        "data.py": [
            (
                "sent = str(caption.strip())\n        sent = sent.lstrip('b')  # remove the beginning mark",
                "sent = caption.strip().decode('utf-8')",
            ),
            ("str(caption).lower())", "caption.decode('utf-8').lower())"),
        ],
    },
}


def stub_modules(names: tuple[str, ...], only_absent: bool = False) -> None:
    """Empty modules `names`, every function of which does nothing (`configure`, `log_value`, ...); with
    `only_absent`, only those that cannot be imported."""
    for name in names:
        if only_absent:
            try:
                importlib.import_module(name)
                continue
            except ImportError:
                pass
        module = types.ModuleType(name)
        module.__getattr__ = _no_op  # type: ignore[method-assign]
        sys.modules[name] = module


def _no_op(name: str) -> object:
    """Any public name of a stub module: a function that does nothing."""
    if name.startswith("__"):
        raise AttributeError(name)
    return lambda *a, **k: None


def run_offline_on_cpu(unused: tuple[str, ...]) -> None:
    """What every training run of the authors' code here needs: `unused` as empty modules (`stub_modules`),
    nltk's `word_tokenize` as `str.split` (the parity and benchmark captions are lower-case words without
    punctuation, which the two tokenise alike; nltk's punkt data is not needed) and `no_cuda`."""
    stub_modules(unused)
    import nltk

    nltk.tokenize.word_tokenize = str.split
    no_cuda()


def no_cuda() -> None:
    """`Tensor.cuda` and `torch.cuda.synchronize` do nothing (the authors' CPU-less code calls both)."""
    torch.Tensor.cuda = lambda self, *a, **k: self  # type: ignore[method-assign]
    torch.cuda.synchronize = lambda *a, **k: None


def real_lengths_and_listed_ids(module: types.ModuleType, dataset: str, ids_at: int = -1) -> None:
    """The released precomputed-feature loader of `module` as these runs need it: the dataset class
    `dataset` has its split's real length (the released dev split claims a fixed 5,000 captions), and
    `module.collate_fn` gives the batch ids (its item `ids_at`) as a list (NumPy 2 reads a tuple index as one
    index per axis)."""
    cls = getattr(module, dataset)
    dataset_init, collate = cls.__init__, module.collate_fn

    def real_length(self, *a, **k):  # type: ignore[no-untyped-def]
        dataset_init(self, *a, **k)
        self.length = len(self.captions)

    def listed_ids(batch):  # type: ignore[no-untyped-def]
        items = list(collate(batch))
        items[ids_at] = list(items[ids_at])
        return tuple(items)

    cls.__init__ = real_length
    module.collate_fn = listed_ids


def patched_checkout(checkout: Path, system: str, files: tuple[str, ...] | None = None) -> Path:
    """A temporary copy of `checkout`'s Python files (or only `files`) with `EDITS[system]` applied, removed
    when the process ends.

    Raises:
        SystemExit: one line naming the file and the text, where an edit finds nothing to replace.
    """
    folder = Path(tempfile.mkdtemp(prefix=f"official_{system}_"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)  # the copy lives as long as the process
    sources = [checkout / f for f in files] if files else sorted(checkout.rglob("*.py"))
    for source in sources:
        target = folder / source.relative_to(checkout)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    for name, edits in EDITS[system].items():
        if files and name not in files:
            continue
        path = folder / name
        text = path.read_text()
        for old, new in edits:
            if old not in text:
                raise SystemExit(f"error: {checkout / name}: no {old!r} to change (another commit?)")
            text = text.replace(old, new)
        path.write_text(text)
    return folder


def import_patched(checkout: Path, system: str, file: str) -> types.ModuleType:
    """`file` of `checkout`, imported from its patched copy under a name of its own."""
    folder = patched_checkout(checkout, system, (file,))
    name = f"official_{system}_{Path(file).stem}"
    (folder / file).rename(folder / f"{name}.py")
    sys.path.insert(0, str(folder))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(folder))


def parsed_options(script: types.ModuleType) -> argparse.Namespace:
    """The namespace `script.main()` parses from `sys.argv` (main stopped right after `parse_args`)."""
    parse = argparse.ArgumentParser.parse_args
    parsed: list[argparse.Namespace] = []

    class Parsed(Exception):
        pass

    def stop_after(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> argparse.Namespace:
        parsed.append(parse(self, *args, **kwargs))
        raise Parsed

    argparse.ArgumentParser.parse_args = stop_after  # type: ignore[method-assign,assignment]
    try:
        script.main()
    except Parsed:
        pass
    finally:
        argparse.ArgumentParser.parse_args = parse  # type: ignore[method-assign]
    return parsed[0]
