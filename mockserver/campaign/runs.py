"""One run of a campaign: a fresh mock, the client team's command against it, and what came of it.

Each run starts a mock of its own (`mockserver serve --port 0`), with the fault's scenario in every sandbox it will
ever hold (`--inject`: also those a harness makes per test, whatever options it makes them with) and a trail of
every call (`--call-trail`: the calls of sandboxes deleted before the run ends stay there). The command runs with
MOCKSERVER_URL set to that mock's root: its default sandbox is a fresh world, and a harness makes its sandboxes
there. The command is stopped after `timeout` seconds (its whole process group: a test runner's workers too).
"""

import json
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from mockserver.campaign.faults import rule
from mockserver.client.start import start_local

TAIL = 60                               # lines of a command's output a report keeps
# what a failing test looks like in the output of the runners the harnesses use
FAILED_TEST = [re.compile(pattern) for pattern in (
    r"^FAILED (\S+)",                                   # pytest
    r"^--- FAIL: (\S+)",                                # go test
    r"^\s*not ok \d+ - (.+?)(?: # .*)?$",               # TAP (node --test's tap reporter), subtests indented
    r"^\s*\u2716 (.+?)(?: \(\d[\d.]*m?s\))?$",          # node --test's spec reporter
    r"^\s*(?:FAIL|\u00d7) (.+?)(?: \d+ms)?$",           # vitest
)]
ENVIRONMENT_OFF = ("MOCKSERVER_START", "MOCKSERVER_COMMAND", "MOCKSERVER_CONTROL_TOKEN")


@dataclass
class Run:
    """What one run came to: the command's exit status (None when it was stopped), its output's tail, the tests
    it says failed, and every call the mock saw."""
    key: str
    exit_code: int | None = None
    timed_out: bool = False
    seconds: float = 0.0
    tail: list = field(default_factory=list)
    failed_tests: list = field(default_factory=list)
    calls: list = field(default_factory=list)
    problem: str | None = None          # the run itself could not be made (the mock did not start ...)


class Stopped(Exception):
    """The campaign was interrupted while this run was under way."""


@dataclass
class Options:
    command: list
    timeout: float = 600.0
    client_timeout: float | None = None
    serve_args: tuple = ()
    clock: str = "manual"
    workdir: str | None = None
    env: dict = field(default_factory=dict)


class Runner:
    """Makes runs; `stop()` ends the ones under way (an interrupted campaign)."""

    def __init__(self, options):
        self.options = options
        self.running: set = set()
        self.lock = threading.Lock()
        self.stopping = False

    def run(self, fault=None):
        """One run: the baseline (`fault` None) or a run with `fault` injected."""
        key = fault.key if fault is not None else "baseline"
        with tempfile.TemporaryDirectory(prefix="mockserver-campaign-") as folder:
            trail = Path(folder) / "calls.jsonl"
            args = ["--call-trail", str(trail), "--rate-limit", "1000000/3600", *self.options.serve_args]
            if fault is not None:
                scenario = Path(folder) / "fault.json"
                scenario.write_text(json.dumps(rule(fault, self.options.client_timeout)))
                args += ["--inject", str(scenario)]
            try:
                mock = start_local(*args, clock=self.options.clock, log=str(Path(folder) / "mock.log"))
            except Exception as error:                  # said in the report, never a traceback
                return Run(key, problem=f"the mock did not start: {error}")
            try:
                run = self._command(key, mock.url, Path(folder))
            finally:
                mock.stop()
            run.calls = read_trail(trail)
            return run

    def _command(self, key, url, folder):
        env = {name: value for name, value in os.environ.items() if name not in ENVIRONMENT_OFF}
        # the harnesses' journals of failing tests go with the run (its calls are in the report), not into the
        # suite's folder
        env.update(self.options.env, MOCKSERVER_URL=url, MOCKSERVER_UNUSED_RULES="off",
                   MOCKSERVER_JOURNAL_DIR=str(folder / "journals"))
        started = time.monotonic()
        process = subprocess.Popen(self.options.command, cwd=self.options.workdir, env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        with self.lock:
            if self.stopping:
                _kill(process)
            self.running.add(process)
        lines: deque = deque(maxlen=2000)
        reader = threading.Thread(target=_read_lines, args=(process.stdout, lines), daemon=True)
        reader.start()
        run = Run(key)
        try:
            process.wait(self.options.timeout)
        except subprocess.TimeoutExpired:
            run.timed_out = True
            _kill(process)
            process.wait()
        finally:
            with self.lock:
                self.running.discard(process)
        reader.join(5)
        run.seconds = time.monotonic() - started
        run.exit_code = None if run.timed_out else process.returncode
        text = list(lines)
        run.tail = text[-TAIL:]
        run.failed_tests = failed_tests(text)
        if self.stopping:
            raise Stopped(key)
        return run

    def stop(self):
        """End every command under way (and take no more)."""
        with self.lock:
            self.stopping = True
            running = list(self.running)
        for process in running:
            _kill(process)


def _read_lines(stream, into):
    for raw in iter(stream.readline, b""):
        into.append(raw.decode("utf-8", "replace").rstrip("\n"))
    stream.close()


def _kill(process):
    """The command and whatever it started (its own process group)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def failed_tests(lines):
    """The failing tests a runner's output names (pytest, go test, node:test, Vitest), in order, once each."""
    found = []
    for index, line in enumerate(lines):
        for pattern in FAILED_TEST:
            match = pattern.match(line)
            if match and match.group(1).strip() not in found and not _failed_by_its_subtests(lines, index):
                found.append(match.group(1).strip())
                break
    return found


def _failed_by_its_subtests(lines, index):
    """Whether the TAP `not ok` at `index` is a suite that failed only because a test in it did (node:test says so
    in the block under it): the test is named, not its suite."""
    for line in lines[index + 1:index + 12]:
        text = line.strip()
        if text == "...":
            return False
        if text == "failureType: 'subtestsFailed'":
            return True
    return False


def read_trail(path):
    """The calls a mock's trail holds (calls/trail.py), in the order they were journaled."""
    try:
        with open(path, encoding="utf-8") as handle:
            return [json.loads(line) for line in handle if line.strip()]
    except FileNotFoundError:
        return []
