"""``python -m tests.support.until_ray FOLDER N ARGS...``: ``vse-ray ARGS`` up to where its Ray work starts,
in step with N processes (a race test).

The process imports everything, marks itself ready in FOLDER and waits until N processes are ready, so that
all of them start their command at the same moment. Ray is not started, and the first Tune stage (a sweep's
fit, a study's warm-up) is a Ctrl-C: exit code 130 means the command got through all it does before Ray.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import NoReturn

import vse_ray.ray_session
import vse_ray.study.run
import vse_ray.tune.sweep
from vse_ray.cli.main import app


def _ctrl_c(*args: object, **kwargs: object) -> NoReturn:
    raise KeyboardInterrupt


def main() -> None:
    folder, count, args = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    vse_ray.ray_session.ensure_ray = lambda *args, **kwargs: None
    vse_ray.tune.sweep.fit_trials = _ctrl_c
    vse_ray.study.run.train_warmups = _ctrl_c
    (folder / f"ready-{os.getpid()}").touch()
    deadline = time.monotonic() + 120
    while len(list(folder.glob("ready-*"))) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    app(args, prog_name="vse-ray")


if __name__ == "__main__":
    main()
