"""`mockserver <command>` run as a process in the repository's root, and the one line a refused command prints."""

import os
import subprocess
import sys

from support import ROOT


def run(*args, env=None, timeout=60):
    """`mockserver *args` to its end: the CompletedProcess (text). MOCKSERVER_URL is never passed on."""
    environ = {**os.environ, **(env or {})}
    environ.pop("MOCKSERVER_URL", None)
    return subprocess.run([sys.executable, "-m", "mockserver", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=environ)


def one_line(stderr):
    """The one line a refusal prints: no usage block, no traceback."""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "usage:" not in stderr and "Traceback" not in stderr, stderr
    return lines[0]
