"""Ray job entrypoint of demo: `ray job submit -- python pipelines/demo.py ...` (`vse-ray demo`)."""

from __future__ import annotations

import typer

from vse_ray.cli.demo import demo

if __name__ == "__main__":
    typer.run(demo)
