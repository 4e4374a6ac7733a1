"""Ray job entrypoint of a sweep: `ray job submit -- python pipelines/sweep.py --space ... --data-dir ...`."""

from __future__ import annotations

import typer

from vse_ray.cli.errors import readable_errors
from vse_ray.cli.sweep import sweep

if __name__ == "__main__":
    # Tune joins the running cluster (inside `ray job submit`), else starts a local Ray
    typer.run(readable_errors(sweep))
