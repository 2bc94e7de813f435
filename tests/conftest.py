"""Shared fixtures: an in-process mock per test (manual clock, self-check on), and a live
`mockserver serve` process for tests that need real sockets.

Every reply of the in-process mock is validated against the API document; a test fails
when the mock answered anything its own document does not allow.
"""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from mockserver.app import MockServer
from mockserver.core.settings import Settings
from mockserver.document.spec import Spec

pytest_plugins = ["browser_support"]

ROOT = Path(__file__).resolve().parent.parent
ORG = "8d3e6a4b-1f2c-4b7a-9e1d-3c5f7a9b2d10"
OTHER_ORG = "5b1c9e2a-7d4f-4a3b-8c6e-0f2d4b6a8c21"
CLUSTER = "c1a5e7d9-3b2f-4e6a-8d1c-9f7b5a3e1d42"
PROJECT = "2f6b8d0a-4c1e-4b3d-9a5f-7e9c1b3d5f63"
ENV = "e4a6c8b0-2d4f-4a6c-8e0b-2d4f6a8c0e84"
APP = "a7c9e1b3-5d7f-4b9d-8f1b-3d5f7b9d1fa5"
CONTAINER = "c8e0a2c4-6d8f-4a0c-9e2a-4c6e8a0c2e69"
DATABASE = "d0e2a4c6-8a0c-4e2a-8c4e-6a8c0e2a4c06"
JOB = "b3d5f7a9-1c3e-4f5a-9b1d-5f7a9c1e3b27"
HELM = "f6a8c0e2-4b6d-4f8a-8c0e-6b8d0f2a4c48"
TERRAFORM = "e9f1a3b5-7c9e-4b1d-8f3a-5b7d9f1b3d8a"
REGISTRY = "0a2c4e6f-8b0d-4f2a-9c4e-6f8b0d2f4a6c"
ADMIN = {"Authorization": "Token mock-admin-token"}
READ = {"Authorization": "Token mock-read-token"}
WRITE = {"Authorization": "Token mock-write-token"}
DEPLOY = {"Authorization": "Token mock-deploy-token"}


@pytest.fixture(scope="session")
def spec():
    return Spec.load()


@pytest.fixture
def make_server(spec):
    """Build an in-process mock with settings overrides; its replies are checked against the document."""
    servers = []

    def make(**overrides):
        settings = Settings(clock="manual", self_check=True, **overrides)
        server = MockServer(settings, spec=spec)
        servers.append(server)
        return server

    yield make
    for server in servers:
        assert server.pipeline.violations == [], "replies that break the API document:\n" + "\n".join(server.pipeline.violations)


@pytest.fixture
def server(make_server):
    return make_server()


@pytest.fixture
def client(server):
    """A sync HTTP client on the in-process mock, authenticated as the admin token."""
    with TestClient(server, base_url="http://mock", headers=ADMIN) as test_client:
        yield test_client


def assert_error(reply, status):
    """The platform's error envelope: {status, error, message} as application/json."""
    assert reply.status_code == status, reply.text
    assert reply.headers["content-type"].startswith("application/json")
    body = reply.json()
    assert body["status"] == status
    assert isinstance(body["error"], str) and body["error"]
    assert isinstance(body["message"], str) and body["message"]
    return body


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(url, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{url} did not answer within {timeout} s")


class LiveServer:
    """`mockserver serve` in a subprocess on a free loopback port."""

    def __init__(self, *args):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "mockserver", "serve", "--port", str(self.port), *args]
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


@pytest.fixture(scope="module")
def live_manual():
    """One live server with the manual clock for a whole module (tests reset it themselves)."""
    server = LiveServer("--clock", "manual")
    yield server
    server.stop()


@pytest.fixture
def live_server():
    """Start a live server with extra CLI arguments: `live_server("--clock", "manual")`."""
    started = []

    def start(*args):
        server = LiveServer(*args)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
