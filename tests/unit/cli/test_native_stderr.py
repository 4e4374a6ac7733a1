"""native_stderr_to_log: native writes to descriptor 2 go to the log file, Python's stderr to the console."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_native_writes_go_to_the_log_and_python_stderr_to_the_console(tmp_path):
    script = textwrap.dedent(
        """
        import os, sys
        from vse_ray.log_file import native_stderr_to_log

        with native_stderr_to_log(sys.argv[1]) as path:
            os.write(2, b"native core-worker line\\n")
            print("progress line", file=sys.stderr)
        os.write(2, b"after the block\\n")
        print(path)
        """
    )
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-c", script, str(out)], capture_output=True, text=True, check=True, timeout=60
    )
    log = (out / "logs" / "vse_ray.log").read_text()
    assert done.stdout.strip() == str(out / "logs" / "vse_ray.log")
    assert "native core-worker line" in log and "progress line" not in log
    assert "progress line" in done.stderr and "native core-worker line" not in done.stderr
    assert "after the block" in done.stderr  # the console is back once the block ends
