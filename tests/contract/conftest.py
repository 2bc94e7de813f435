"""Fixtures of the contract tests: a mock recording a client's calls, and processes started from the command line."""

import pytest
from support.upstream import Process


@pytest.fixture(scope="module")
def recorder(live_manual):
    """The mock the client's tests run against: the module's live server with the manual clock (tests/conftest.py)."""
    return live_manual


@pytest.fixture
def processes():
    """Start `mockserver COMMAND ARGS...` processes; those still running are stopped after the test."""
    started = []

    def start(command, *args):
        process = Process(command, *args)
        started.append(process)
        return process
    yield start
    for process in started:
        if process.process.poll() is None:
            process.stop()
