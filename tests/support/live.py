"""A live mock: `mockserver serve` in a subprocess on a free loopback port (the fixtures live_server and
live_manual of conftest.py start these; a test that needs its own start arguments starts one itself)."""

import os
import subprocess
import sys

from support import ROOT
from support.http import free_port, wait_for


class LiveServer:
    """`mockserver serve` in a subprocess on a free loopback port."""

    def __init__(self, *args):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # --exit-with-parent: a test run killed midway (a CI timeout) leaves no server behind
        command = [sys.executable, "-m", "mockserver", "serve", "--port", str(self.port), "--exit-with-parent", *args]
        self.process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            wait_for(f"{self.url}/_mock/health")
        except RuntimeError:
            self.stop()
            raise RuntimeError(f"mockserver did not start: {self.process.stderr.read().decode()}") from None

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
