"""Ray job entrypoint of demo: `ray job submit -- python pipelines/demo.py ...` (`vse-ray demo`)."""

from __future__ import annotations

import typer

from vse_ray.cli.demo import demo
from vse_ray.cli.errors import readable_errors

if __name__ == "__main__":
    typer.run(readable_errors(demo))
