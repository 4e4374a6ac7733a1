"""`vse-ray --help` and the command options load no heavy library (torch, Ray, MLflow, Arrow ...)."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("torch", "ray", "mlflow", "sklearn", "pyarrow", "pandas")


def _imported_after(code: str) -> list[str]:
    """The heavy libraries imported after running ``code`` (its own output is discarded)."""
    probe = (
        "import contextlib, io, sys\n"
        f"with contextlib.redirect_stdout(io.StringIO()):\n    {code}\n"
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_importing_the_cli_imports_no_heavy_library():
    assert _imported_after("import vse_ray.cli.main") == []


def test_help_of_every_command_imports_no_heavy_library():
    code = (
        "from vse_ray.cli.main import COMMANDS, app; "
        "[app([name, '--help'], standalone_mode=False) for name in [*COMMANDS, '--help']]"
    )
    assert _imported_after(code) == []
