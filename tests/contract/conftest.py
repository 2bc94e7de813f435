"""Fixtures of the contract tests: a mock recording a client's calls, and processes started from the command line."""

import pytest
from support.live import LiveServer
from support.upstream import Process


@pytest.fixture(scope="module")
def recorder():
    """The mock the client's tests run against (manual clock), one per test module."""
    server = LiveServer("--clock", "manual")
    yield server
    server.stop()


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
