"""Shared fixtures: an in-process mock per test (manual clock, self-check on), and a live
`mockserver serve` process for tests that need real sockets (marked `server`). The browser fixtures
(chromium, page) come from support/browser.py; the helpers the tests share are in support/.

Every reply of the in-process mock is validated against the API document; a test fails
when the mock answered anything its own document does not allow.
"""

import pytest
from starlette.testclient import TestClient
from support.ids import ADMIN
from support.live import LiveServer

from mockserver.app import MockServer
from mockserver.core.settings import Settings
from mockserver.document.spec import Spec

pytest_plugins = ["support.browser"]


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
        assert server.pipeline.violations == [], ("replies that break the API document:\n"
                                                  + "\n".join(server.pipeline.violations))


@pytest.fixture
def server(make_server):
    return make_server()


@pytest.fixture
def client(server):
    """A sync HTTP client on the in-process mock, authenticated as the admin token."""
    with TestClient(server, base_url="http://mock", headers=ADMIN) as test_client:
        yield test_client


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
