"""pytest plugin for client teams: a running mock, reset between tests, and journal assertions.

    def test_deploy_waits_for_success(sandbox):
        client = MyPlatformClient(sandbox.url, token=sandbox.token("admin"))
        client.deploy(APP_ID)
        sandbox.advance(60)
        sandbox.assert_called(operation="deployApplication", times=1)

The session starts one mock in-process (uvicorn in a thread, on a free loopback port, manual clock by
default), or as a process of its own (`--mockserver-start local`: `mockserver serve --port 0`), or as its
container through Testcontainers (`--mockserver-start container`, the image `--mockserver-image`), or uses
an existing one given by `--mockserver-url` or the environment variable MOCKSERVER_URL (one that cannot be
reached fails the first test with one line naming the URL and where it was given, and the session stops
there). Each test gets a sandbox of its own (its handle: a `mockserver.client.Client` scoped to it), named
from the xdist worker and the test (and `--mockserver-sandbox-prefix`, e.g. a CI job id), made fresh
from the fixtures before the test and deleted after it: tests running in parallel against
one mock never see each other's calls, clock, scenarios or records. The sandbox keeps each
request and reply body whole up to `--mockserver-journal-body-limit` bytes (1 MiB by default).

Consumer contracts: `mockserver.write_pact(path)` writes the test's calls as a pact (merged into
the file when it exists, so a session's tests write one pact), `write_har(path)` as a HAR log;
`--mockserver-pact FILE` writes every test's calls into one pact without a line of code. Writers of one
file take turns under the lock file FILE.lock, which is deleted when the writing is done. A test whose calls
no other mock could verify (they start from a snapshot private to its sandbox, after a `restore()`, or its
journal gave up calls they relied on) adds nothing to the file and fails in one line that says why.

What the suite never used: at the end of the session the plugin asks the mock which scenario rules loaded in
the tests' sandboxes never fired in any of them (GET /_mock/usage?scope=mock with the sandboxes' prefix; xdist
workers' answers are put together) and lists them in the terminal summary; `--mockserver-unused-rules fail`
also fails the session, `off` does not ask.
"""

import hashlib
import os
import re
import threading
import time

import httpx
import pytest

from mockserver.client import Client, MockServerError, PactRefused, connect, free_port, start_container, start_local
from mockserver.client.constants import JOURNAL_BODY_LIMIT  # bytes of a body a test's sandbox keeps whole

STARTS = ("inprocess", "local", "container")
UNUSED_RULES = ("warn", "fail", "off")
FIRED = pytest.StashKey[dict]()                 # scenario rule -> times fired, over the session's sandboxes


class _InProcess:
    """The mock served by uvicorn in a daemon thread, with `serve`'s protocol (its limits, its direct path, and the
    connection that network faults cut: process/connections.py)."""

    def __init__(self, clock="manual", fixtures=None, scenarios=()):
        import uvicorn

        from mockserver.app import MockServer
        from mockserver.core.settings import Settings
        from mockserver.process.connections import Limits, protocol

        settings = Settings(clock=clock, scenarios=list(scenarios))
        if fixtures:
            settings.fixtures = fixtures
        self.app = MockServer(settings)
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=port, log_level="warning",
                                                   access_log=False, lifespan="on", ws="none",
                                                   http=protocol(Limits(), self.app)))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.time() + 20
        while not self.server.started:
            if time.time() > deadline or not self.thread.is_alive():
                raise RuntimeError("the mock server did not start")
            time.sleep(0.02)

    def stop(self):
        self.server.should_exit = True
        self.thread.join(timeout=10)


def pytest_addoption(parser):
    group = parser.getgroup("mockserver")
    group.addoption("--mockserver-url", default=os.environ.get("MOCKSERVER_URL"),
                    help="use a running mock at this URL instead of starting one (env MOCKSERVER_URL)")
    group.addoption("--mockserver-start", default=os.environ.get("MOCKSERVER_START", "inprocess"), choices=STARTS,
                    help="how the session starts its mock when no URL is given: inprocess (uvicorn in a thread, the "
                         "default), local (mockserver serve --port 0 as a process; env MOCKSERVER_COMMAND names "
                         "the executable) or container (Testcontainers; env MOCKSERVER_START)")
    group.addoption("--mockserver-image", default=os.environ.get("MOCKSERVER_IMAGE", "idp-mockserver:local"),
                    help="image of --mockserver-start container (env MOCKSERVER_IMAGE; default idp-mockserver:local)")
    group.addoption("--mockserver-network", default=os.environ.get("MOCKSERVER_NETWORK"),
                    help="host: the container runs on the host's network (engines without a bridge); default: "
                         "its port mapped (env MOCKSERVER_NETWORK)")
    group.addoption("--mockserver-clock", default="manual", choices=("manual", "real"),
                    help="clock of the mock the session starts (default manual)")
    group.addoption("--mockserver-control-token", default=os.environ.get("MOCKSERVER_CONTROL_TOKEN"),
                    help="control token of a shared mock (env MOCKSERVER_CONTROL_TOKEN)")
    group.addoption("--mockserver-journal-body-limit", type=int, default=JOURNAL_BODY_LIMIT,
                    help="bytes of a request or reply body each test's sandbox keeps whole (default 1 MiB; "
                         "at most 16 MiB): larger ones are journaled cut, and a pact matches them by type")
    group.addoption("--mockserver-pact", default=os.environ.get("MOCKSERVER_PACT"),
                    help="write every test's calls into this pact file (env MOCKSERVER_PACT)")
    group.addoption("--mockserver-pact-consumer", default="consumer", help="the pact's consumer name")
    group.addoption("--mockserver-pact-provider", default="idp-platform", help="the pact's provider name")
    group.addoption("--mockserver-sandbox-prefix", default=os.environ.get("MOCKSERVER_SANDBOX_PREFIX", ""),
                    help="prefix of the tests' sandbox names, e.g. a CI job id (env MOCKSERVER_SANDBOX_PREFIX)")
    group.addoption("--mockserver-unused-rules", default=os.environ.get("MOCKSERVER_UNUSED_RULES", "warn"),
                    choices=UNUSED_RULES, help="scenario rules no test made fire, at the end of the session: warn "
                                               "(list them in the summary; the default), fail (and fail the session), "
                                               "off (env MOCKSERVER_UNUSED_RULES)")


def unreachable(url, timeout=10):
    """Why the mock at `url` cannot be used (it cannot be reached: nothing listens, a wrong host or scheme),
    in a few words; None when it answers (whatever it answers: the control API says the rest)."""
    try:
        httpx.get(f"{url.rstrip('/')}/_mock/health", timeout=timeout)
    except (httpx.TransportError, httpx.InvalidURL) as error:
        return str(error) or type(error).__name__
    return None


def _where_the_url_came_from(config, url):
    given = any(str(arg).startswith("--mockserver-url") for arg in config.invocation_params.args)
    if not given and url == os.environ.get("MOCKSERVER_URL"):
        return "the environment variable MOCKSERVER_URL (the default of --mockserver-url)"
    return "--mockserver-url"


@pytest.fixture(scope="session")
def mockserver_session(request):
    option = request.config.getoption
    url, control_token = option("--mockserver-url"), option("--mockserver-control-token")
    if url:
        problem = unreachable(url)
        if problem is not None:
            # one line instead of every test's connection traceback, and the session stops after this test
            message = (f"mockserver: cannot reach the mock at {url}, given by "
                       f"{_where_the_url_came_from(request.config, url)}: {problem}. Start it there "
                       f"(mockserver serve), or give no --mockserver-url and no MOCKSERVER_URL to start one "
                       f"in-process")
            request.session.shouldstop = message
            pytest.fail(message, pytrace=False)
        client = connect(url, control_token=control_token)
    else:
        client = _started(option("--mockserver-start"), option("--mockserver-clock"), option("--mockserver-image"),
                          option("--mockserver-network"))
    yield client
    try:
        if option("--mockserver-unused-rules") != "off":
            _note_fired(request.config, client.usage(scope="mock", prefix=sandbox_head(
                option("--mockserver-sandbox-prefix"), os.environ.get("PYTEST_XDIST_WORKER", "main")) + "-"))
    except (MockServerError, httpx.HTTPError):     # a mock gone, or one older than GET /_mock/usage: no report
        pass
    finally:
        client.stop()


def _note_fired(config, report):
    """Add a usage report's rules to the session's (a rule fired when it fired in any sandbox, on any worker)."""
    fired = config.stash.setdefault(FIRED, {})
    for rule in report["rules"]["results"]:
        fired[rule["rule"]] = fired.get(rule["rule"], 0) + rule["fired"]


def unused_rules(config):
    return sorted(name for name, times in config.stash.get(FIRED, {}).items() if not times)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """An xdist worker is done: the rules its sandboxes loaded and fired join the controller's."""
    fired = getattr(node, "workeroutput", {}).get("mockserver_fired")
    if fired is not None:
        _note_fired(node.config, {"rules": {"results": [{"rule": k, "fired": v} for k, v in fired.items()]}})


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if hasattr(config, "workeroutput"):          # an xdist worker: the controller says it, once
        config.workeroutput["mockserver_fired"] = config.stash.get(FIRED, {})
    elif unused_rules(config) and config.getoption("--mockserver-unused-rules") == "fail" and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    unused = [] if hasattr(config, "workeroutput") else unused_rules(config)
    if not unused:
        return
    failing = config.getoption("--mockserver-unused-rules") == "fail"
    terminalreporter.write_sep("-", f"mockserver: {len(unused)} scenario rule(s) never fired", red=failing,
                               yellow=not failing)
    for name in unused:
        terminalreporter.write_line(f"{name}: loaded, never fired in any test's sandbox")
    if failing:
        terminalreporter.write_line("mockserver: the session fails (--mockserver-unused-rules fail)")


def _started(start, clock, image, network):
    """The session's own mock, started as asked: a Client whose stop() stops it."""
    if start == "local":
        return start_local(clock=clock)
    if start == "container":
        return start_container(image, network=network, clock=clock)
    local = _InProcess(clock=clock)
    return Client(local.url, owner=local)


def sandbox_head(prefix, worker):
    """What the names of a worker's sandboxes start with (before a '-')."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{prefix}{worker}")[:52]


def sandbox_name(prefix, worker, nodeid):
    """A valid sandbox name (A-Z a-z 0-9 _ . -, at most 64) that is unique per prefix, worker and test."""
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "-", nodeid.rsplit("::", 1)[-1]).strip("-")
    digest = hashlib.sha1(f"{prefix}|{worker}|{nodeid}".encode()).hexdigest()[:10]
    return f"{sandbox_head(prefix, worker)}-{readable}"[:64 - 11] + "-" + digest


@pytest.fixture
def sandbox(mockserver_session, request):
    """The mock, seen through a fresh sandbox of this test's own (deleted after the test): the name of this
    concept in every client (Node's useSandbox, Go's mocktest.Sandbox)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    prefix = request.config.getoption("--mockserver-sandbox-prefix")
    client = mockserver_session.in_sandbox(sandbox_name(prefix, worker, request.node.nodeid),
                                           journal_body_limit=request.config.getoption("--mockserver-journal-body-limit"))
    yield client
    pact_file, refused = request.config.getoption("--mockserver-pact"), None
    try:
        if pact_file:
            client.write_pact(pact_file, request.config.getoption("--mockserver-pact-consumer"),
                              request.config.getoption("--mockserver-pact-provider"))
    except PactRefused as error:
        refused = str(error)
    finally:
        client.delete_sandbox()
        client.close()
    if refused:
        pytest.fail(refused, pytrace=False)


@pytest.fixture
def mockserver(sandbox):
    """The test's sandbox under the name the fixture had: deprecated, kept for a release (use `sandbox`)."""
    return sandbox
