"""Ray job entrypoint of precompute: `ray job submit -- python pipelines/precompute.py --out DIR ...`."""

from __future__ import annotations

import typer

from vse_ray.cli.errors import readable_errors
from vse_ray.cli.precompute import precompute

if __name__ == "__main__":
    # joins the running cluster (inside `ray job submit`), else starts a local Ray
    typer.run(readable_errors(precompute))
