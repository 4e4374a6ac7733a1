"""The `vse-ray` command: one Typer sub-command per workload, each a thin call into the library."""

from __future__ import annotations

import atexit
import gc
from collections.abc import Callable
from typing import Any

import typer

from vse_ray.cli.compare import compare
from vse_ray.cli.demo import demo
from vse_ray.cli.errors import readable_errors
from vse_ray.cli.evaluate import evaluate
from vse_ray.cli.gsmn_data import gsmn_data
from vse_ray.cli.import_checkpoint import import_checkpoint
from vse_ray.cli.precompute import precompute
from vse_ray.cli.pretrain_clip import pretrain_clip
from vse_ray.cli.recipes import recipes
from vse_ray.cli.study import study
from vse_ray.cli.sweep import sweep
from vse_ray.cli.train import train

app = typer.Typer(
    help="vse_ray: train and evaluate visual-semantic embeddings with graded relevance, on Ray.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)
# One line per sub-command; each is wrapped once by `readable_errors` (short messages, --debug tracebacks).
COMMANDS: dict[str, Callable[..., Any]] = {
    "sweep": sweep,
    "compare": compare,
    "precompute": precompute,
    "train": train,
    "recipes": recipes,
    "evaluate": evaluate,
    "import": import_checkpoint,
    "gsmn-data": gsmn_data,
    "demo": demo,
    "study": study,
    "pretrain-clip": pretrain_clip,
}
for _name, _command in COMMANDS.items():
    app.command(name=_name)(readable_errors(_command))
# The interpreter's last garbage collection at exit walks every object torch, Ray and MLflow made (about 2 s
# at the end of `vse-ray train`). Frozen at exit, they are freed without that walk.
atexit.register(gc.freeze)

if __name__ == "__main__":
    app()
