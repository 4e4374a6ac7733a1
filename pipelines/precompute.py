"""Ray job entrypoint of precompute: `ray job submit -- python pipelines/precompute.py --out DIR ...`."""

from __future__ import annotations

import typer

from vse_ray.cli.precompute import precompute

if __name__ == "__main__":
    typer.run(precompute)  # joins the running cluster (inside `ray job submit`), else starts a local Ray
