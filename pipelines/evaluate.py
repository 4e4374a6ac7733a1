"""Ray job entrypoint of evaluate: `ray job submit -- python pipelines/evaluate.py --run ID ...`."""

from __future__ import annotations

import typer

from vse_ray.cli.errors import readable_errors
from vse_ray.cli.evaluate import evaluate

if __name__ == "__main__":
    typer.run(readable_errors(evaluate))
