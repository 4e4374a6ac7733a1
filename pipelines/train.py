"""Ray job entrypoint of train: `ray job submit -- python pipelines/train.py --data DIR --loss NAME ...`."""

from __future__ import annotations

import typer

from vse_ray.cli.errors import readable_errors
from vse_ray.cli.train import train

if __name__ == "__main__":
    # joins the running cluster (inside `ray job submit`), else starts a local Ray
    typer.run(readable_errors(train))
